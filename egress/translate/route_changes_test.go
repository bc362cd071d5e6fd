package translate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestRouteChangesAreTheSetDifferences: over random lists of route identities and random
// edits of them (routes created, deleted, edited, moved), the routes added and gone are
// the set differences of the two whole lists, although only their differing middles are
// put in sets.
func TestRouteChangesAreTheSetDifferences(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for try := range 500 {
		was := make([]deltaID, rng.IntN(12))
		for i := range was {
			was[i] = deltaID{uid: types.UID(fmt.Sprint("r", i)), generation: 1}
		}
		now := editIDs(rng, was)
		added, gone := routeChanges(now, was)
		wantAdded, wantGone := naiveDifference(now, was), naiveDifference(was, now)
		if !maps.Equal(added, wantAdded) || !maps.Equal(gone, wantGone) {
			t.Fatalf("try %d: was %v, now %v: added %v, gone %v; want %v, %v", try, was, now, added, gone, wantAdded, wantGone)
		}
	}
}

// editIDs is ids with one to three random edits: one created, deleted, given a new
// generation or moved elsewhere.
func editIDs(rng *rand.Rand, ids []deltaID) []deltaID {
	out := append([]deltaID(nil), ids...)
	for e := range 1 + rng.IntN(3) {
		at := rng.IntN(len(out) + 1)
		switch op := rng.IntN(4); {
		case op == 0 || len(out) == 0 || at == len(out):
			created := deltaID{uid: types.UID(fmt.Sprint("new", e)), generation: 1}
			out = append(out[:at], append([]deltaID{created}, out[at:]...)...)
		case op == 1:
			out = append(out[:at], out[at+1:]...)
		case op == 2:
			out[at].generation++
		default:
			moved := out[at]
			out = append(out[:at], out[at+1:]...)
			to := rng.IntN(len(out) + 1)
			out = append(out[:to], append([]deltaID{moved}, out[to:]...)...)
		}
	}
	return out
}

// naiveDifference is the identities of a not in b.
func naiveDifference(a, b []deltaID) map[routeSeen]bool {
	out := map[routeSeen]bool{}
	for _, x := range a {
		out[routeSeen{uid: x.uid, generation: x.generation}] = true
	}
	for _, x := range b {
		delete(out, routeSeen{uid: x.uid, generation: x.generation})
	}
	return out
}
