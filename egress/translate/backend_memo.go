package translate

import (
	"bytes"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// A Backend's translation is a function of its spec, the Secret and ConfigMap values it
// reads, the DNS guard's addresses for its name, the clock (certificate validity) and,
// for an IP destination, the address policy. For FQDN and IP destinations the translator
// records all of these while it translates; the Cache keeps the outcome with that
// record, and a later translation reuses it only after replaying the record: equal spec,
// the same values read again (so the same parsed certificates), the same vetted
// addresses, every key pair still valid at the new time and the IP still allowed. Service destinations also depend on Services,
// EndpointSlices and BackendTLSPolicies, and are always translated.

// recorder collects what one Backend's translation reads. A nil recorder records nothing.
type recorder struct {
	reads []valueRead
	// pairs are the key pairs checked against the clock, as parsed from values in reads.
	pairs []pairEntry
	addrs []addressRead
}

// addressRead is the DNS guard's answer for a name, as far as endpoints use it.
type addressRead struct {
	name string
	ips  []netip.Addr
}

// saw records a value read. It keeps the value itself, not a copy: inputs are not
// modified once translated (see Cache), and at 20,000 referenced Secrets the copies were
// tens of MiB the manager held twice.
func (r *recorder) saw(v valueRead) {
	if r == nil {
		return
	}
	r.reads = append(r.reads, v)
}

// keyPairChecked records what parsing a certificate and its key (both among the reads)
// told: the parse is a function of those bytes, and only its verdict at a given time
// needs computing again.
func (r *recorder) keyPairChecked(p pairEntry) {
	if r != nil {
		p.key = "" // the key itself is among the reads
		r.pairs = append(r.pairs, p)
	}
}

// resolution returns the DNS guard's answer for name, recording the addresses used.
func (t *translator) resolution(name string) egress.Resolution {
	res := t.addrs[name]
	if t.rec != nil {
		t.rec.addrs = append(t.rec.addrs, addressRead{name: name, ips: vettedIPs(res)})
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

// backendMemo is one usable Backend's translation and the record it was made from. It
// holds private copies only and is never modified once stored.
type backendMemo struct {
	spec egressv1alpha1.BackendSpec
	rec  recorder
	// ports and effective are the translation's outcome.
	ports     []portCluster
	effective *egressv1alpha1.EffectiveTLS
}

// memoizable tells whether the record covers everything the Backend's translation reads.
func memoizable(b *egressv1alpha1.Backend) bool { return memoizableDestination(destinationOf(b)) }

func memoizableDestination(d destination) bool {
	return d.svcName.Name == "" && (d.hostname != "" || d.ip.IsValid())
}

// reuseBackend returns the Backend's translation from the Cache when its record replays.
func (t *translator) reuseBackend(n types.NamespacedName, b *egressv1alpha1.Backend) *translatedBackend {
	m := t.cache.backend(n, t.epoch)
	if m == nil || !equalBackendSpec(&m.spec, &b.Spec) {
		return nil
	}
	d := destinationOf(b)
	if !memoizableDestination(d) || !t.replays(b, d, &m.rec) {
		return nil
	}
	tb := &translatedBackend{b: b, dest: d, ports: m.ports}
	if m.effective != nil {
		tb.effective = m.effective.DeepCopy() // statuses are the caller's to keep
	}
	return tb
}

// replays tells whether translating b (whose destination is d) now would read what rec
// holds and pass the same checks.
func (t *translator) replays(b *egressv1alpha1.Backend, d destination, rec *recorder) bool {
	if t.resolveDestination(b, &d) != nil {
		return false
	}
	if !t.rereads(rec.reads) {
		return false
	}
	for _, p := range rec.pairs {
		if t.verdict(p) != nil {
			return false
		}
	}
	for _, a := range rec.addrs {
		if !sameIPs(t.addrs[a.name], a.ips) {
			return false
		}
	}
	return true
}

// rereads tells whether reading again finds the values reads holds. Consecutive reads
// of one object (a client certificate and its key) look the object up once.
func (t *translator) rereads(reads []valueRead) bool {
	var obj heldObject
	for i := range reads {
		r := &reads[i]
		if i == 0 || r.kind != reads[i-1].kind || r.ref != reads[i-1].ref {
			obj = t.object(r.kind, r.ref)
		}
		if !sameRead(obj.read(r.kind, r.ref, r.key), *r) {
			return false
		}
	}
	return true
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

func sameRead(now, then valueRead) bool {
	return now.found == then.found && now.secretType == then.secretType && now.has == then.has &&
		(now.value == nil) == (then.value == nil) && bytes.Equal(now.value, then.value)
}

// rememberBackend stores a usable Backend's translation with its record.
func (t *translator) rememberBackend(n types.NamespacedName, b *egressv1alpha1.Backend, tb *translatedBackend, rec *recorder) {
	if !tb.usable() || tb.dest.service != nil {
		return
	}
	m := &backendMemo{spec: *b.Spec.DeepCopy(), rec: *rec}
	for _, p := range tb.ports {
		m.ports = append(m.ports, portCluster{port: p.port, cluster: cloneCluster(p.cluster), secrets: cloneSecrets(p.secrets), policy: p.policy})
	}
	if tb.effective != nil {
		m.effective = tb.effective.DeepCopy()
	}
	t.cache.storeBackend(n, t.epoch, m)
}

// cloneCluster is a deep copy of a Backend's cluster, so that the memo shares no memory
// with the objects it was translated from.
func cloneCluster(c *ir.Cluster) *ir.Cluster {
	out := *c
	out.Endpoints = slices.Clone(c.Endpoints)
	if c.TLS != nil {
		tls := *c.TLS
		tls.SubjectAltNames = slices.Clone(c.TLS.SubjectAltNames)
		tls.CipherSuites, tls.ALPN = slices.Clone(c.TLS.CipherSuites), slices.Clone(c.TLS.ALPN)
		out.TLS = &tls
	}
	out.CircuitBreaker = clonePtr(c.CircuitBreaker)
	out.OutlierDetector = clonePtr(c.OutlierDetector)
	out.Credential = clonePtr(c.Credential)
	if m := c.RequestHeaders; m != nil {
		out.RequestHeaders = &ir.HeaderMutation{Set: slices.Clone(m.Set), Add: slices.Clone(m.Add), Remove: slices.Clone(m.Remove)}
	}
	return &out
}

// cloneSecrets copies the list; the key material is the inputs' own (see saw).
func cloneSecrets(in []ir.Secret) []ir.Secret { return slices.Clone(in) }

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
