package translate

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Cache remembers work across translations. Certificate checks: parsing certificate
// chains, private keys and CA bundles costs tens of microseconds each, against a few for
// everything else a Backend needs; an outcome is keyed by the very bytes checked and
// compared in full on every hit, and only the clock-dependent part (expiry) is
// recomputed. Units: the translation of an FQDN or IP Backend is kept with the identity
// of everything it read, and reused only while those identities hold (units.go).
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
	// pairs is keyed by the certificate chain; the entry holds the key it was paired with.
	pairs    map[string]*pairEntry
	bundles  map[string]*bundleEntry
	backends unitTable[backendUnit]
	// backendStatuses are the statuses of unit Backends (backend_status_unit.go).
	backendStatuses map[types.NamespacedName]*statusEntry
	// orders holds the sorted names of maps a translation sorts (see sorted_order.go).
	orders map[string]*orderEntry
}

// pairEntry is what parsing one chain and key told.
type pairEntry struct {
	key  string
	used uint64
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
	used uint64
	err  error
}

// NewCache returns an empty Cache. Translations share a process-wide one unless
// Options.Cache names another; a fresh Cache makes a translation start cold.
func NewCache() *Cache {
	return &Cache{pairs: map[string]*pairEntry{}, bundles: map[string]*bundleEntry{}, backends: unitTable[backendUnit]{}, backendStatuses: map[types.NamespacedName]*statusEntry{}, orders: map[string]*orderEntry{}}
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

// sweep drops the entries neither this translation nor the one before used.
func (c *Cache) sweep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.pairs {
		if e.used+1 < c.epoch {
			delete(c.pairs, k)
		}
	}
	for k, e := range c.bundles {
		if e.used+1 < c.epoch {
			delete(c.bundles, k)
		}
	}
	c.backends.sweep(c.epoch)
	for k, e := range c.backendStatuses {
		if e.used+1 < c.epoch {
			delete(c.backendStatuses, k)
		}
	}
	for k, e := range c.orders {
		if e.used+1 < c.epoch {
			delete(c.orders, k)
		}
	}
}

// backend returns the unit of a Backend, or nil.
func (c *Cache) backend(n types.NamespacedName, epoch uint64) *unitEntry[backendUnit] {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.backends[n]
	if !ok {
		return nil
	}
	e.used = max(e.used, epoch)
	return e
}

// backendStatus returns the last status of a unit Backend, or nil.
func (c *Cache) backendStatus(n types.NamespacedName, epoch uint64) *statusEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.backendStatuses[n]
	if !ok {
		return nil
	}
	e.used = max(e.used, epoch)
	return e
}

func (c *Cache) storeBackendStatus(n types.NamespacedName, e *statusEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backendStatuses[n] = e
}

// backendCount is the number of Backend units the Cache holds.
func (c *Cache) backendCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.backends)
}

func (c *Cache) storeBackend(n types.NamespacedName, e *unitEntry[backendUnit]) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.backends[n] = e
}

// keyPair returns what parsing cert and key tells, parsing only on a miss.
func (c *Cache) keyPair(epoch uint64, cert, key []byte) pairEntry {
	c.mu.Lock()
	e, ok := c.pairs[string(cert)]
	if ok && e.key == string(key) {
		e.used = max(e.used, epoch)
		out := *e
		c.mu.Unlock()
		return out
	}
	c.mu.Unlock()
	fresh := parseKeyPair(cert, key)
	fresh.used = epoch
	stored := fresh // other goroutines update the stored entry's use under the lock
	c.mu.Lock()
	c.pairs[string(cert)] = &stored
	c.mu.Unlock()
	return fresh
}

// caBundle returns checkCABundle's verdict on data, parsing only on a miss.
func (c *Cache) caBundle(epoch uint64, data []byte) error {
	c.mu.Lock()
	e, ok := c.bundles[string(data)]
	if ok {
		e.used = max(e.used, epoch)
		c.mu.Unlock()
		return e.err
	}
	c.mu.Unlock()
	err := checkCABundle(data)
	c.mu.Lock()
	c.bundles[string(data)] = &bundleEntry{used: epoch, err: err}
	c.mu.Unlock()
	return err
}
