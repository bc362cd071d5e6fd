package translate

import (
	"net/netip"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/egress"
)

// A unit is a piece of translation computed from a few inputs: today one Backend's
// clusters. The Cache keeps a unit's output with the identity of every object it read,
// and a later translation computes the unit again only when one of those identities
// changed. An object's identity is its UID and the version the API server gave it: its
// resourceVersion or, for objects whose units read nothing but the spec (Backends), its
// generation, which status writes leave alone. The API server never gives two contents
// one identity, so comparing identities is comparing contents, at the cost of a map
// lookup and a string comparison instead of a walk through the values. An object
// without a version (a file given to `portcullis translate`, an object built by a test)
// has no identity: a unit that read one is not kept, and is computed on every
// translation.
//
// Units declare their inputs by reading them: while a unit computes, every Secret or
// ConfigMap read goes through translator.read, every DNS answer through
// translator.resolution and every key pair check through translator.checkKeyPair, and
// each of these notes what it saw in the unit's unitReads. Beyond objects, a unit
// depends on the DNS guard's vetted addresses for the names it resolved and on the
// clock for the key pairs it checked; both are noted too and checked again on reuse.

// objectSeen is what a unit saw of one object it read.
type objectSeen struct {
	kind  string
	name  types.NamespacedName
	found bool
	uid   types.UID
	// version is the resourceVersion; for versionByGeneration kinds, generation is used
	// instead.
	version    string
	generation int64
}

// versionByGeneration are the kinds whose units read only their spec (besides name and
// namespace), so that a new generation is the only change that matters to them.
var versionByGeneration = map[string]bool{"Backend": true}

// identity is what an object is seen as: absent (nil), or its UID and version.
func identity(kind string, name types.NamespacedName, o metav1.Object) objectSeen {
	s := objectSeen{kind: kind, name: name}
	if o == nil {
		return s
	}
	s.found, s.uid = true, o.GetUID()
	if versionByGeneration[kind] {
		s.generation = o.GetGeneration()
	} else {
		s.version = o.GetResourceVersion()
	}
	return s
}

// versioned tells whether the identity pins the content: absent, or a version and,
// for a generation (which starts again at 1 when an object of the name is created
// anew), a UID. A resourceVersion alone is never reused by another content of the same
// kind and name, even across deletion.
func (s objectSeen) versioned() bool {
	return !s.found || s.version != "" || (s.generation > 0 && s.uid != "")
}

// addressRead is the DNS guard's answer for a name, as far as endpoints use it.
type addressRead struct {
	name string
	ips  []netip.Addr
}

// unitReads collects what one unit reads. A nil *unitReads notes nothing: translation
// outside a unit reads the same way.
type unitReads struct {
	objects []objectSeen
	// pairs are the key pairs checked against the clock, as parsed from objects read.
	pairs []pairEntry
	addrs []addressRead
	// unversioned: an object read has no identity, so the unit cannot be kept.
	unversioned bool
}

// sawObject notes an object read (o nil: it does not exist). Consecutive reads of one
// object (a client certificate and its key) are noted once.
func (r *unitReads) sawObject(kind string, name types.NamespacedName, o metav1.Object) {
	if r == nil {
		return
	}
	if n := len(r.objects); n > 0 && r.objects[n-1].kind == kind && r.objects[n-1].name == name {
		return
	}
	s := identity(kind, name, o)
	r.unversioned = r.unversioned || !s.versioned()
	r.objects = append(r.objects, s)
}

// keyPairChecked notes what parsing a certificate and its key (both in objects read)
// told: the parse is a function of those objects, and only its verdict at a given time
// needs computing again.
func (r *unitReads) keyPairChecked(p pairEntry) {
	if r != nil {
		p.cert, p.key = nil, nil // the objects holding them are among the objects read
		r.pairs = append(r.pairs, p)
	}
}

// resolution returns the DNS guard's answer for name, noting the addresses used.
func (t *translator) resolution(name string) egress.Resolution {
	res := t.addrs[name]
	if t.reads != nil {
		t.reads.addrs = append(t.reads.addrs, addressRead{name: name, ips: vettedIPs(res)})
	}
	return res
}

func vettedIPs(res egress.Resolution) []netip.Addr {
	ips := make([]netip.Addr, len(res.Vetted))
	for i, v := range res.Vetted {
		ips[i] = v.IP
	}
	return ips
}

// stillHolds tells whether a unit that read reads would read the same now: every object
// has the identity it had, every DNS answer vets the same addresses and every key pair
// passes its check at the new time.
func (t *translator) stillHolds(reads *unitReads) bool {
	for i := range reads.objects {
		then := &reads.objects[i]
		if now := identity(then.kind, then.name, t.current(then.kind, then.name)); now != *then {
			return false
		}
	}
	for _, a := range reads.addrs {
		if !sameIPs(t.addrs[a.name], a.ips) {
			return false
		}
	}
	for _, p := range reads.pairs {
		if t.verdict(p) != nil {
			return false
		}
	}
	return true
}

// current returns the object of a kind and name in this translation's input, or nil.
func (t *translator) current(kind string, name types.NamespacedName) metav1.Object {
	if kind != "Backend" {
		return t.object(kind, name).meta() // Secrets and ConfigMaps, as read
	}
	if s := t.backends[name]; s != nil {
		return s.b
	}
	return nil
}

// sameIPs tells whether the resolution vets exactly ips, in order.
func sameIPs(res egress.Resolution, ips []netip.Addr) bool {
	if len(res.Vetted) != len(ips) {
		return false
	}
	for i, v := range res.Vetted {
		if v.IP != ips[i] {
			return false
		}
	}
	return true
}

// unitEntry is a unit's output, what it read, and the last epoch that used it.
type unitEntry[V any] struct {
	used  uint64
	reads unitReads
	out   V
}

// unitTable holds the units of one kind by the name of the object they translate.
type unitTable[V any] map[types.NamespacedName]*unitEntry[V]
