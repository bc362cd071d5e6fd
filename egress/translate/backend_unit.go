package translate

import (
	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// A Backend with an FQDN or IP destination is a unit (units.go): its translation reads
// the Backend's spec, the Secrets and ConfigMaps its TLS and extensions name, the DNS
// guard's answer for its name and the clock. Beyond those it depends on the options
// (the address policy, this machine's own ports and addresses), which the reuse checks
// by resolving the destination again. Service destinations also depend on Services,
// EndpointSlices and BackendTLSPolicies, which are not read through the unit accessors
// yet, and are always translated.

// backendUnit is a usable Backend's translation, never modified once stored. Its
// clusters and secrets are those of the translation that built it, not copies: a
// cluster is built for one Backend and nothing changes it afterwards (what needs another
// cluster copies it first: withClientCertificate, an XBackend's clusters, which are not
// units), and a Result is read-only; compareWithCold checks that no translation changes
// what an earlier one returned. The effective TLS is copied: it goes into the status.
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
		out.ports = append(out.ports, portCluster{port: p.port, cluster: p.cluster, secrets: p.secrets, policy: p.policy})
	}
	if tb.effective != nil {
		out.effective = tb.effective.DeepCopy()
	}
	tb.unit = &unitEntry[backendUnit]{used: t.epoch, reads: *reads, out: out}
	t.cache.storeBackend(s.name, tb.unit)
	return tb
}
