package bench

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// BenchmarkOneGrantChanged creates or deletes a ReferenceGrant that admits nothing the
// routes use, and changes one Backend so that the snapshot changes. A ReferenceGrant is
// an input of every route side, so the translation runs in full and attaches every
// route afresh: every route entry is made anew, equal to the last. What keeps the
// build from making every virtual host again is its field-by-field comparison, the
// early cutoff of egress/envoyconfig/ir_equal.go (reuse by identity alone took this
// change at 10,000 from 120 to 230 ms, 2026-12-03).
func BenchmarkOneGrantChanged(b *testing.B) {
	benchChanges(b, func(res *egress.Resources, i int) {
		changeBackend(res, i%len(res.Backends), i)
		res.ReferenceGrants = nil
		if i%2 == 0 {
			res.ReferenceGrants = []gwapiv1.ReferenceGrant{unrelatedGrant(i)}
		}
	})
}

// unrelatedGrant admits HTTPRoutes of a namespace without routes to the Backends of a
// namespace without Backends; each one made is a new object (UID, resourceVersion).
func unrelatedGrant(i int) gwapiv1.ReferenceGrant {
	return gwapiv1.ReferenceGrant{
		ObjectMeta: metav1.ObjectMeta{Namespace: "unrelated", Name: "grant",
			UID: types.UID("grant-" + strconv.Itoa(i)), ResourceVersion: strconv.Itoa(i + 2), Generation: 1},
		Spec: gwapiv1.ReferenceGrantSpec{
			From: []gwapiv1.ReferenceGrantFrom{{Group: gwapiv1.GroupName, Kind: "HTTPRoute", Namespace: "elsewhere"}},
			To:   []gwapiv1.ReferenceGrantTo{{Group: "egress.portcullis.io", Kind: "Backend"}},
		},
	}
}
