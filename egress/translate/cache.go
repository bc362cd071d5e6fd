package translate

import (
	"bytes"
	"hash/maphash"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache remembers work across translations. Certificate checks: parsing certificate
// chains, private keys and CA bundles costs tens of microseconds each, against a few for
// everything else a Backend needs; an outcome is keyed by the very bytes checked and
// compared in full on every hit, and only the clock-dependent part (expiry) is
// recomputed. Units: the translation of an FQDN or IP Backend is kept with the identity
// of everything it read, and reused only while those identities hold (units.go); a
// Gateway's route side likewise, with its declared inputs (route_side.go).
// Either way a cached answer is the answer translating again would give: translation
// stays a pure function of its inputs, only faster.
//
// The IR a translation returns may share memory with later translations through the
// Cache: treat a Result as read-only. The Cache keeps the Secret and ConfigMap values a
// translation read by reference, not copied: do not modify an input's data after
// translating it (the manager never does: its objects are replaced, not modified), and
// give an object a new resourceVersion (or, for a Backend, a new generation) whenever
// its content changes, as the API server does.
//
// An entry unused by the last two translations is dropped, so the cache holds no more
// than what the cluster references. A Cache is safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	epoch uint64
	// pairs and bundles are keyed by a hash of the certificate chain or bundle (seed);
	// an entry holds the bytes it was computed from, the inputs' own (not copies: ten
	// thousand chains and keys copied into map keys were 16 MB), compared in full on
	// every hit.
	seed     maphash.Seed
	pairs    map[uint64]*pairEntry
	bundles  map[uint64]*bundleEntry
	backends unitTable[backendUnit]
	// backendStatuses are the statuses of unit Backends (backend_status_unit.go).
	backendStatuses map[types.NamespacedName]*statusEntry
	// orders holds the sorted names of maps a translation sorts (see sorted_order.go).
	orders map[string]*orderEntry
	// nameOrders holds the sorted names of object lists (see sorted_order.go).
	nameOrders map[string]*nameOrderEntry
	// nameIndexes are the indexes by name of the Secrets, Services and ConfigMaps
	// (name_index.go).
	nameIndexes map[string]*nameIndexEntry
	// routeSides are the Gateways' route sides by "namespace/name" (route_side.go).
	routeSides map[string]*routeSide
	// namings are the HTTPRoutes naming each Gateway, by "namespace/name"
	// (route_naming.go).
	namings map[string]*namingEntry
	// base is what the last translation read and returned, for a delta (delta.go);
	// deltas counts the translations that ran as one.
	base   *deltaBase
	deltas uint64
	// backendIndex is the last translation's index of Backends (backend_index.go).
	backendIndex *backendIndex
}

// pairEntry is what parsing one chain and key told.
type pairEntry struct {
	cert, key []byte
	used      uint64
	// invalid is set when the two are not a valid PEM key pair.
	invalid bool
	// unsupported says why Envoy would refuse the key although Go parses it.
	unsupported string
	// leaf says whether a leaf certificate was parsed; its validity period follows.
	leaf                bool
	notBefore, notAfter time.Time
}

// bundleEntry is what parsing one CA bundle told.
type bundleEntry struct {
	data []byte
	used uint64
	err  error
}

// NewCache returns an empty Cache. Translations share a process-wide one unless
// Options.Cache names another; a fresh Cache makes a translation start cold.
func NewCache() *Cache {
	return &Cache{seed: maphash.MakeSeed(), pairs: map[uint64]*pairEntry{}, bundles: map[uint64]*bundleEntry{}, backends: unitTable[backendUnit]{}, backendStatuses: map[types.NamespacedName]*statusEntry{}, orders: map[string]*orderEntry{}, nameOrders: map[string]*nameOrderEntry{}, nameIndexes: map[string]*nameIndexEntry{}, routeSides: map[string]*routeSide{}, namings: map[string]*namingEntry{}}
}

// defaultCache serves translations whose Options name no Cache.
var defaultCache = NewCache()

// begin opens a translation: entries it touches are marked with the new epoch.
func (c *Cache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	return c.epoch
}

// takeBase hands the base to one translation: another one meanwhile finds none and
// translates in full.
func (c *Cache) takeBase() *deltaBase { return takeOut(c, &c.base) }

func (c *Cache) putBase(b *deltaBase) { putBack(c, &c.base, b) }

// takeBackendIndex hands the kept index of Backends to one translation: another one
// meanwhile finds none and builds its own.
func (c *Cache) takeBackendIndex() *backendIndex { return takeOut(c, &c.backendIndex) }

func (c *Cache) putBackendIndex(x *backendIndex) { putBack(c, &c.backendIndex, x) }

// takeOut returns what slot, a field of c, holds and leaves it empty, so that one
// translation at a time owns it; putBack stores it again.
func takeOut[T any](c *Cache, slot **T) *T {
	c.mu.Lock()
	defer c.mu.Unlock()
	v := *slot
	*slot = nil
	return v
}

func putBack[T any](c *Cache, slot **T, v *T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	*slot = v
}

// Deltas is how many translations with the Cache ran as deltas of the last one
// (delta.go): the manager labels its reconciles with it.
func (c *Cache) Deltas() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deltas
}

// countDelta counts a translation that ran as a delta.
func (c *Cache) countDelta() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deltas++
}

// sweep drops the entries neither this translation nor the one before used.
func (c *Cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	sweepTable(c.pairs, c.epoch)
	sweepTable(c.bundles, c.epoch)
	sweepTable(c.backends, c.epoch)
	sweepTable(c.backendStatuses, c.epoch)
	sweepTable(c.orders, c.epoch)
	sweepTable(c.nameOrders, c.epoch)
	sweepTable(c.nameIndexes, c.epoch)
	sweepTable(c.routeSides, c.epoch)
	sweepTable(c.namings, c.epoch)
}

// entry is what every table of the Cache holds: something that knows the last epoch
// that used it.
type entry interface{ lastUse() *uint64 }

func (e *pairEntry) lastUse() *uint64      { return &e.used }
func (e *bundleEntry) lastUse() *uint64    { return &e.used }
func (e *orderEntry) lastUse() *uint64     { return &e.used }
func (e *unitEntry[V]) lastUse() *uint64   { return &e.used }
func (e *statusEntry) lastUse() *uint64    { return &e.used }
func (e *routeSide) lastUse() *uint64      { return &e.used }
func (e *nameOrderEntry) lastUse() *uint64 { return &e.used }
func (e *nameIndexEntry) lastUse() *uint64 { return &e.used }

// take returns the entry under k, if any, marked as used by epoch.
func take[K comparable, E entry](c *Cache, m map[K]E, k K, epoch uint64) (E, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := m[k]
	if ok {
		u := e.lastUse()
		*u = max(*u, epoch)
	}
	return e, ok
}

// put stores an entry under k.
func put[K comparable, E entry](c *Cache, m map[K]E, k K, e E) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m[k] = e
}

// sweepTable drops the entries neither the translation of epoch nor the one before
// used. The caller holds the Cache's lock.
func sweepTable[K comparable, E entry](m map[K]E, epoch uint64) {
	for k, e := range m {
		if *e.lastUse()+1 < epoch {
			delete(m, k)
		}
	}
}

// backend returns the unit of a Backend, or nil.
func (c *Cache) backend(n types.NamespacedName, epoch uint64) *unitEntry[backendUnit] {
	e, _ := take(c, c.backends, n, epoch)
	return e
}

func (c *Cache) storeBackend(n types.NamespacedName, e *unitEntry[backendUnit]) {
	put(c, c.backends, n, e)
}

// backendStatus returns the last status of a unit Backend, or nil.
func (c *Cache) backendStatus(n types.NamespacedName, epoch uint64) *statusEntry {
	e, _ := take(c, c.backendStatuses, n, epoch)
	return e
}

func (c *Cache) storeBackendStatus(n types.NamespacedName, e *statusEntry) {
	put(c, c.backendStatuses, n, e)
}

// backendCount is the number of Backend units the Cache holds.
func (c *Cache) backendCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.backends)
}

// keyPair returns what parsing cert and key tells, parsing only on a miss.
func (c *Cache) keyPair(epoch uint64, cert, key []byte) pairEntry {
	h := maphash.Bytes(c.seed, cert)
	c.mu.Lock()
	e, ok := c.pairs[h]
	if ok && bytes.Equal(e.cert, cert) && bytes.Equal(e.key, key) {
		e.used = max(e.used, epoch)
		out := *e
		c.mu.Unlock()
		return out
	}
	c.mu.Unlock()
	fresh := parseKeyPair(cert, key)
	fresh.cert, fresh.key, fresh.used = cert, key, epoch
	stored := fresh // other goroutines update the stored entry's use under the lock
	c.mu.Lock()
	c.pairs[h] = &stored
	c.mu.Unlock()
	return fresh
}

// caBundle returns checkCABundle's verdict on data, parsing only on a miss.
func (c *Cache) caBundle(epoch uint64, data []byte) error {
	h := maphash.Bytes(c.seed, data)
	c.mu.Lock()
	e, ok := c.bundles[h]
	if ok && bytes.Equal(e.data, data) {
		e.used = max(e.used, epoch)
		c.mu.Unlock()
		return e.err
	}
	c.mu.Unlock()
	err := checkCABundle(data)
	c.mu.Lock()
	c.bundles[h] = &bundleEntry{data: data, used: epoch, err: err}
	c.mu.Unlock()
	return err
}

// routeSide returns the kept route side of a Gateway, or nil.
func (c *Cache) routeSide(gateway string, epoch uint64) *routeSide {
	e, _ := take(c, c.routeSides, gateway, epoch)
	return e
}

// eachRouteSide calls f with every kept route side until it returns false; it returns
// false then. The sides are read-only.
func (c *Cache) eachRouteSide(f func(*routeSide) bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.routeSides {
		if !f(e) {
			return false
		}
	}
	return true
}

func (c *Cache) storeRouteSide(gateway string, e *routeSide) {
	put(c, c.routeSides, gateway, e)
}
