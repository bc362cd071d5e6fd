package translate

import (
	"slices"

	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// A Backend with an FQDN or IP destination is a unit (units.go): its translation reads
// the Backend's spec, the Secrets and ConfigMaps its TLS and extensions name, the DNS
// guard's answer for its name and the clock. Beyond those it depends on the options
// (the address policy, this machine's own ports and addresses), which the reuse checks
// by resolving the destination again. Service destinations also depend on Services,
// EndpointSlices and BackendTLSPolicies, which are not read through the unit accessors
// yet, and are always translated.

// backendUnit is a usable Backend's translation. It holds private copies only and is
// never modified once stored.
type backendUnit struct {
	ports     []portCluster
	effective *egressv1alpha1.EffectiveTLS
}

func unitDestination(d destination) bool {
	return d.svcName.Name == "" && (d.hostname != "" || d.ip.IsValid())
}

// reuseBackend returns the Backend's translation from the Cache when nothing it read
// changed.
func (t *translator) reuseBackend(n types.NamespacedName, b *egressv1alpha1.Backend) *translatedBackend {
	e := t.cache.backend(n, t.epoch)
	if e == nil || !t.stillHolds(&e.reads) {
		return nil
	}
	d := destinationOf(b)
	if !unitDestination(d) || t.resolveDestination(b, &d) != nil {
		return nil
	}
	// The unit's output is shared with every translation that reuses it: a Result is
	// read-only (see Cache).
	return &translatedBackend{b: b, dest: d, ports: e.out.ports, effective: e.out.effective, unit: e}
}

// buildBackendUnit translates a Backend whose destination makes it a unit, noting what
// it reads, and keeps the translation when it is usable and every input had an identity.
func (t *translator) buildBackendUnit(s *backendSlot) *translatedBackend {
	reads := &unitReads{}
	reads.sawObject("Backend", s.name, s.b)
	t.reads = reads
	tb := t.buildBackend(s)
	t.reads = nil
	if !tb.usable() || reads.unversioned {
		return tb
	}
	out := backendUnit{}
	for _, p := range tb.ports {
		out.ports = append(out.ports, portCluster{port: p.port, cluster: cloneCluster(p.cluster), secrets: slices.Clone(p.secrets), policy: p.policy})
	}
	if tb.effective != nil {
		out.effective = tb.effective.DeepCopy()
	}
	tb.unit = &unitEntry[backendUnit]{used: t.epoch, reads: *reads, out: out}
	t.cache.storeBackend(s.name, tb.unit)
	return tb
}

// cloneCluster is a deep copy of a Backend's cluster, so that the unit shares no memory
// with the translation that built it (the key material is the inputs' own: Secrets are
// replaced, never modified).
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

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
