package translate

import (
	"maps"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress"
)

// TestCacheLetsGatheredListsGo checks that what the Cache keeps from a translation holds
// no pointer into the lists it was given. The manager gathers a new list of a kind on
// every change of it; a route side refiled from the kept one (a route delta) that still
// pointed at a route of an older list kept that whole list alive, change after change:
// at 10,000 HTTPRoutes, 96 lists and some 170 MB of a 400 MB heap. Each golden input is
// translated from lists of its own, then again from new lists as the manager would after
// a route was created (the objects copied into them, a copy of a route added), and every
// list of the first translation must be collectable while the Cache lives.
func TestCacheLetsGatheredListsGo(t *testing.T) {
	deltas := 0
	for _, in := range goldenInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, in)
			if addrs == nil {
				addrs = egress.Addresses{}
			}
			cache, versions := NewCache(), newAPIVersions()
			defer runtime.KeepAlive(cache) // the manager's lives as long as it does
			opts.Cache = cache
			first := translateFromOwnLists(t, versions, res, addrs, opts)
			before := cache.Deltas()
			regather(res)
			if len(res.HTTPRoutes) > 0 {
				res.HTTPRoutes = withCreatedRoute(res.HTTPRoutes)
			}
			versions.assign(t, res)
			Translate(res, versions.answers(t, addrs), opts)
			if cache.Deltas() != before {
				deltas++
			}
			if kept := first.awaitReleased(); len(kept) > 0 {
				t.Errorf("lists of the first translation still reachable from the Cache: %v", kept)
			}
		})
	}
	t.Logf("%d inputs translated again as deltas", deltas)
	if deltas == 0 {
		t.Fatal("no input's second translation was a delta: the check proves nothing")
	}
}

// gatheredLists are lists handed to a translation, by kind, and whether each was
// collected since.
type gatheredLists struct {
	mu        sync.Mutex
	remaining map[string]bool
}

// translateFromOwnLists translates res from copies of its lists that it gives back to no
// one, and returns them to watch for their collection.
func translateFromOwnLists(t *testing.T, versions *apiVersions, res *egress.Resources, addrs egress.Addresses, opts Options) *gatheredLists {
	t.Helper()
	lists := &gatheredLists{remaining: map[string]bool{}}
	gathered := *res
	for kind, first := range regather(&gathered) {
		lists.remaining[kind] = true
		runtime.AddCleanup(first, func(kind string) { lists.release(kind) }, kind)
	}
	versions.assign(t, &gathered)
	Translate(&gathered, versions.answers(t, addrs), opts)
	*res = gathered
	regather(res)
	return lists
}

func (l *gatheredLists) release(kind string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.remaining, kind)
}

// awaitReleased collects garbage until every list was collected, or gives up and
// returns the kinds whose lists were not.
func (l *gatheredLists) awaitReleased() []string {
	for range 20 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond) // cleanups run on a goroutine of their own
		l.mu.Lock()
		n := len(l.remaining)
		l.mu.Unlock()
		if n == 0 {
			return nil
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Sorted(maps.Keys(l.remaining))
}

// regather replaces every non-empty list of res with a copy, as a gather makes new
// lists, and returns the start of each copy's array by kind.
func regather(res *egress.Resources) map[string]*byte {
	out := map[string]*byte{}
	v := reflect.ValueOf(res).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		if f.Kind() != reflect.Slice || f.Len() == 0 {
			continue
		}
		c := reflect.MakeSlice(f.Type(), f.Len(), f.Len())
		reflect.Copy(c, f)
		f.Set(c)
		out[v.Type().Field(i).Name] = (*byte)(c.Index(0).Addr().UnsafePointer())
	}
	return out
}

// withCreatedRoute is the routes and a copy of the last one under a new name: a route
// created since the last gather.
func withCreatedRoute(routes []*gwapiv1.HTTPRoute) []*gwapiv1.HTTPRoute {
	created := routes[len(routes)-1].DeepCopy()
	created.Name += "-created"
	created.UID, created.ResourceVersion, created.Generation = "", "", 0
	return append(slices.Clone(routes), created)
}
