package bench

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// BenchmarkOneBackendDeletedAndCreated deletes a Backend a route uses and creates it
// again (under a new UID), in turns, among many, timing translate, build and publish as
// BenchmarkOneBackendChanged does. Each is a route delta with the same routes
// (backendDelta in egress/translate; deltas/op says how many were): the route naming
// the Backend is attached again and the Backend's cluster dropped or added.
func BenchmarkOneBackendDeletedAndCreated(b *testing.B) {
	gone := map[*egress.Resources]*egressv1alpha1.Backend{}
	benchChanges(b, func(res *egress.Resources, i int) {
		if back, ok := gone[res]; ok {
			back = back.DeepCopy()
			back.UID, back.ResourceVersion = types.UID("created-again-"+strconv.Itoa(i)), strconv.Itoa(i+2)
			res.Backends = append(res.Backends, back)
			delete(gone, res)
			return
		}
		k := (i / 2) % len(res.Backends)
		gone[res] = res.Backends[k]
		res.Backends = append(res.Backends[:k:k], res.Backends[k+1:]...)
	})
}
