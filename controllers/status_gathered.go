package controllers

import (
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/egress"
)

// gatheredIndex finds the objects a translation read by type and name.
//
// Writing statuses read every object again from the cache (a deep copy each) to merge
// the translated status into it, although nearly all of them came out as they were: at
// 10,000 Backends and routes that was 20,000 copies and merges per reconcile whatever
// changed. The object as gathered for this translation answers the question first: if
// merging into it changes nothing, the stored status already says what translation
// says and nothing is read or written. The gathered object is at most as new as the
// cache's; when it is older (our last write not seen yet, or another writer's), the
// event of that newer version brings another reconcile, which compares again.
//
// The index is kept from one write to the next, one map per kind: a kind whose list is
// the very slice the last write indexed (the gatherer hands a kind's list out again
// while its informer sent no event, gather_reuse.go) keeps its map. Rebuilding all of
// them for every write allocated 4.4 MB a change at 10,000 Backends and routes, where a
// Backend's edit changes one list of the eight (0.9 MB then: the Backends' map alone;
// since an edit keeps the kind's names and places too, indexKind, nothing but the
// index's header).
type gatheredIndex struct {
	kinds map[reflect.Type]*kindIndex
}

type gatheredKey struct {
	t reflect.Type
	n types.NamespacedName
}

// name is the key of the object in the index and among the verified entries: its
// "namespace/name" (types.NamespacedName.String, "/name" when cluster-scoped), the form
// of the wants' keys, so that checking a want needs no parse (see unverified).
func (k gatheredKey) name() string { return k.n.String() }

// wantName is the index's name of a want's key: a namespaced object's key is already
// "namespace/name"; a cluster-scoped one's is its bare name.
func wantName(key string) string {
	if strings.Contains(key, "/") {
		return key
	}
	return "/" + key
}

// kindIndex is one kind's objects by name, and the list they were indexed from: its
// first element and length. Gathered lists are never modified, and the index holds the
// list's array, so no other list can start at the same address while it is kept.
// names are the objects' keys in the list's order and pos each key's place; at gives
// the object at a place of the list.
type kindIndex struct {
	first unsafe.Pointer
	n     int
	names []string
	pos   map[string]int
	at    func(i int) client.Object
}

// object is the indexed object of that "namespace/name", or nil; a nil index holds none.
func (k *kindIndex) object(name string) client.Object {
	if k == nil {
		return nil
	}
	i, ok := k.pos[name]
	if !ok {
		return nil
	}
	return k.at(i)
}

// update indexes the objects whose statuses the writer writes, reusing the maps of the
// lists indexed before.
func (idx *gatheredIndex) update(res *egress.Resources) {
	if idx.kinds == nil {
		idx.kinds = map[reflect.Type]*kindIndex{}
	}
	indexKind(idx, res.GatewayClasses)
	indexKind(idx, res.Gateways)
	indexPointed(idx, res.HTTPRoutes)
	indexKind(idx, res.TLSRoutes)
	indexKind(idx, res.TCPRoutes)
	indexKind(idx, res.BackendTLSPolicies)
	indexPointed(idx, res.Backends)
	indexKind(idx, res.XBackends)
}

// indexKind indexes objs unless they are the list the kind's map was made from. A new
// list with the same names in the same places (the gatherer patched an object in its
// place: an edit) takes the kind's names and places as they are: building the
// Backends' map again on every edit cost, at 10,000 Backends, 10,000 key strings and
// insertions a change for a map that said the same.
func indexKind[T any, P interface {
	*T
	client.Object
}](idx *gatheredIndex, objs []T) {
	indexItems(idx, reflect.TypeFor[P](), objs, byValue[T, P]())
}

// indexPointed is indexKind for a kind held by pointer.
func indexPointed[T any, P interface {
	*T
	client.Object
}](idx *gatheredIndex, objs []*T) {
	indexItems(idx, reflect.TypeFor[P](), objs, byPointer[T, P]())
}

// indexItems indexes the objects of type t that objs hold as h says.
func indexItems[E any](idx *gatheredIndex, t reflect.Type, objs []E, h holding[E]) {
	first := unsafe.Pointer(unsafe.SliceData(objs))
	at := func(i int) client.Object { return h.object(&objs[i]) }
	k := idx.kinds[t]
	switch {
	case k != nil && k.first == first && k.n == len(objs):
		return
	case k != nil && holdsNames(k.names, len(objs), at):
		idx.kinds[t] = &kindIndex{first: first, n: len(objs), names: k.names, pos: k.pos, at: at}
		return
	}
	names, pos := make([]string, len(objs)), make(map[string]int, len(objs))
	for i := range objs {
		names[i] = client.ObjectKeyFromObject(at(i)).String()
		pos[names[i]] = i
	}
	idx.kinds[t] = &kindIndex{first: first, n: len(objs), names: names, pos: pos, at: at}
}

// holdsNames tells whether the n objects at gives are named names, place by place.
func holdsNames(names []string, n int, at func(int) client.Object) bool {
	if len(names) != n {
		return false
	}
	for i := range n {
		if o := at(i); !isKey(names[i], o.GetNamespace(), o.GetName()) {
			return false
		}
	}
	return true
}

// isKey tells whether key is "namespace/name", without building that string.
func isKey(key, namespace, name string) bool {
	return len(key) == len(namespace)+1+len(name) && key[len(namespace)] == '/' &&
		key[:len(namespace)] == namespace && key[len(namespace)+1:] == name
}

// find returns the gathered object of the key's type and name.
func (idx *gatheredIndex) find(k gatheredKey) (client.Object, bool) {
	o := idx.kinds[k.t].object(k.name())
	return o, o != nil
}

// unchanged tells whether the stored status of the object (of obj's type, named key)
// already says want: the newest version known (gathered, or verified since) was found
// or written to say the same want, or merging want into the gathered object, when it
// is that newest version, changes nothing. mutate runs on a shallow copy: the merges
// replace status fields and never write into what they share with the gathered object.
func (w *statusWriter) unchanged(key types.NamespacedName, obj client.Object, want any, mutate func(client.Object) bool) bool {
	k := gatheredKey{reflect.TypeOf(obj), key}
	g, ok := w.gathered.find(k)
	if !ok {
		return false
	}
	switch w.verified.knows(k, g.GetResourceVersion(), want) {
	case storedSaysWant:
		return true
	case storedSaysOther:
		return false
	}
	v := reflect.ValueOf(g).Elem()
	c := reflect.New(v.Type())
	c.Elem().Set(v)
	if mutate(c.Interface().(client.Object)) {
		return false
	}
	w.verified.store(k, g.GetResourceVersion(), want)
	return true
}

// verifiedStatuses remembers, per object, the resourceVersion whose status was last
// found (or written) to say what translation wanted, and that want. Merging costs tens
// of microseconds an object (conditions, transition times, JSON comparison); telling
// that neither the object nor the want changed costs a lookup and a comparison of two
// values translation made. The wants are translation's own statuses, which nothing
// modifies once written. Entries of objects no write asked about are dropped.
type verifiedStatuses struct {
	mu    sync.Mutex
	kinds map[reflect.Type]map[string]*verifiedEntry
	round uint64
}

type verifiedEntry struct {
	resourceVersion string
	want            any
	round           uint64
}

// knowledge is what the writer knows of an object's stored status, against a want.
type knowledge int

const (
	// compareGathered: the gathered copy is the newest version known; merging want
	// into it tells.
	compareGathered knowledge = iota
	// storedSaysWant: the newest version known was found or written to say want.
	storedSaysWant
	// storedSaysOther: a version newer than the gathered copy (or one that cannot be
	// ordered against it) is known and says something else: read the object and merge.
	storedSaysOther
)

// knows tells what is known of the stored status of k, given the gathered version rv.
//
// The gathered copy can be older than what this writer stored since: a reused
// translation keeps the objects it gathered, and a status write is no input event
// (specOnly, setup.go), so after a write the gathered copy stays the version before
// it until some input changes. Merging into that copy alone lost a status that went
// True, then Pending, then True again: the copy said True, the object Pending, and
// nothing wrote it again (at 10,000 Backends, some stayed Pending while Envoy ran
// them). Versions are ordered as integers, which the API server guarantees since
// comparable resource versions (KEP-5504); one that is not an integer orders nothing.
func (v *verifiedStatuses) knows(k gatheredKey, rv string, want any) knowledge {
	v.mu.Lock()
	e := v.kindLocked(k.t)[k.name()]
	if e != nil {
		e.round = v.round
	}
	v.mu.Unlock()
	if e == nil {
		return compareGathered
	}
	return judge(e.resourceVersion, rv, sameWant(e.want, want))
}

// judge is what is known of a stored status verified at version verified to say a
// want (same: the want asked about), against a gathered copy at version rv.
func judge(verified, rv string, same bool) knowledge {
	if verified == "" || rv == "" {
		return compareGathered
	}
	if verified != rv {
		if c, ok := versionOrder(verified, rv); !ok {
			return storedSaysOther // which is newer is unknown: read
		} else if c < 0 {
			return compareGathered
		}
	}
	switch {
	case same:
		return storedSaysWant
	case verified == rv:
		return compareGathered // the gathered copy is the version verified: merging tells
	}
	return storedSaysOther
}

// knowsNewer tells whether a version of k newer than rv (or one not ordered against
// it) is known: a copy at rv is not what is stored.
func (v *verifiedStatuses) knowsNewer(k gatheredKey, rv string) bool {
	return v.newerEntry(k, rv) != nil
}

// newerEntry is the entry of k when it is of a version newer than rv (or one not
// ordered against it); nil otherwise. Entries are replaced, never modified, so its
// version and want may be read without the lock.
func (v *verifiedStatuses) newerEntry(k gatheredKey, rv string) *verifiedEntry {
	v.mu.Lock()
	e := v.kindLocked(k.t)[k.name()]
	v.mu.Unlock()
	if e == nil || e.resourceVersion == "" || e.resourceVersion == rv {
		return nil
	}
	if c, ok := versionOrder(e.resourceVersion, rv); ok && c < 0 {
		return nil
	}
	return e
}

// versionOrder compares two resourceVersions of one object; ok is false when either
// is not an integer.
func versionOrder(a, b string) (c int, ok bool) {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return c, err == nil
}

func (v *verifiedStatuses) store(k gatheredKey, rv string, want any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.kindLocked(k.t)[k.name()] = &verifiedEntry{resourceVersion: rv, want: want, round: v.round}
}

// kindLocked returns the entries of kind t, made if there are none. v.mu must be held.
func (v *verifiedStatuses) kindLocked(t reflect.Type) map[string]*verifiedEntry {
	if v.kinds == nil {
		v.kinds = map[reflect.Type]map[string]*verifiedEntry{}
	}
	m := v.kinds[t]
	if m == nil {
		m = map[string]*verifiedEntry{}
		v.kinds[t] = m
	}
	return m
}

// sweep ends a write: entries it did not use go, and the next write starts a round.
func (v *verifiedStatuses) sweep() {
	v.mu.Lock()
	defer v.mu.Unlock()
	for _, m := range v.kinds {
		for n, e := range m {
			if e.round != v.round {
				delete(m, n)
			}
		}
	}
	v.round++
}

// unverified lists the keys of the wants of kind t whose stored status is not known to
// say the want (knows), before any is queued: after a translation that changed a few
// statuses among thousands, the rest cost no closure, hand-off to a worker or object
// to read into. The kind's gathered objects and verified entries are found once, one
// lock is taken for the pass, and each want is compared as its own type (same), not
// boxed. Asked object by object (both maps keyed by type and name, a lock, the want
// boxed), at 10,000 Backends and routes this was most of a status write that wrote
// nothing. Both maps are keyed by the wants' "namespace/name" strings: keyed by
// types.NamespacedName (a key parsed from each want, hashed and compared as two strings),
// the parse and the two lookups were some 60% of this pass's CPU; with string keys the
// pass is about 15% faster (BenchmarkStatusWriterNothingToWrite, medians of 10
// interleaved rounds: 15.5 against 18.1 ms, 2026-12-02), at the cost of one key string
// per object whenever a kind's index is rebuilt. update asks again for the keys listed,
// with a merge where it must.
func unverified[W any](w *statusWriter, t reflect.Type, wants map[string]W, same func(stored any, want W) bool) []string {
	var out []string
	kind := w.gathered.kinds[t]
	v := &w.verified
	v.mu.Lock()
	defer v.mu.Unlock()
	entries := v.kindLocked(t)
	for key, want := range wants {
		n := wantName(key)
		g, e := kind.object(n), entries[n]
		if g == nil || e == nil {
			out = append(out, key)
			continue
		}
		e.round = v.round
		if judge(e.resourceVersion, g.GetResourceVersion(), same(e.want, want)) != storedSaysWant {
			out = append(out, key)
		}
	}
	return out
}
