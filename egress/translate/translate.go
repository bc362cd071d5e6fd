// Package translate turns a Resources snapshot and the DNS guard's vetted addresses into
// the IR of every Portcullis Gateway plus the status of every input object. It is a pure
// function: no API server, no network, no clock. Same input, byte-identical output.
// It is best effort: a bad object gets a status saying why and is left out; the rest
// still translates.
package translate

import (
	"net/netip"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Options carries what translation needs beyond the objects themselves.
type Options struct {
	// AddressPolicy vets literal IP destinations; nil refuses every IP destination (fail closed).
	// It also vets Service endpoints outside ClusterCIDRs.
	AddressPolicy egress.AddressPolicy
	// ClusterCIDRs are the cluster's pod and service ranges (the DNS guard's
	// --cluster-cidr). Service endpoints (EndpointSlice addresses) are always refused in
	// loopback, link-local, "this network" and the cloud metadata endpoints; when
	// ClusterCIDRs is set, an endpoint outside them must also pass AddressPolicy, so a
	// private address that is not a pod or a Service is refused. When it is empty, the
	// translator cannot tell pods from other private addresses and allows those.
	ClusterCIDRs []netip.Prefix
	// AllowLoopbackEndpoints admits Service endpoints on loopback (127.0.0.0/8, ::1),
	// which are otherwise always refused. It exists for single-host runs whose upstreams
	// listen on loopback on purpose (the end-to-end tests); no flag of the manager or of
	// `portcullis local` sets it.
	AllowLoopbackEndpoints bool
	// ControllerName is the GatewayClass controllerName to serve (default egress.ControllerName).
	ControllerName string
	// Now is the time certificates are checked against (expired ones are refused with a
	// condition). The translator never reads the clock; zero skips the check.
	Now time.Time
	// Cache memoises certificate parsing across translations (a process-wide Cache when
	// nil). It changes how fast translation is, never what it returns.
	Cache *Cache
	// Unrestricted are source ranges served every route of an isolated Gateway (local
	// mode's own machine); none in a cluster. Isolated listeners keep their shared
	// route table only for them.
	Unrestricted []netip.Prefix
	// HeldPorts are ports other processes hold where Envoy binds Gateway listeners, with
	// what holds each: with the host provider, the manager's own ports and, under
	// `portcullis local`, the control plane's. A listener on one would fail to bind, so
	// it is refused with PortUnavailable naming the holder. None in a cluster, where
	// Envoy has its pod's ports to itself.
	HeldPorts map[uint32]string
	// OwnPorts are the ports Portcullis' own components listen on beside Envoy, with
	// what listens on each (own_ports.go): the xDS server, the manager's metrics and
	// health, every Envoy's admin and metrics and, under `portcullis local`, etcd and
	// kube-apiserver. A destination at one of them on loopback, the unspecified address
	// or OwnAddresses is refused (ForbiddenDestination) whatever AddressPolicy allows.
	OwnPorts map[uint32]string
	// OwnAddresses are this machine's addresses beyond loopback, where a component
	// bound to every interface is reached too; on a host only.
	OwnAddresses []netip.Addr
}

// Result is the output of one translation.
type Result struct {
	// Gateways holds the IR of every accepted Gateway of a Portcullis GatewayClass, by name.
	Gateways []ir.Gateway `json:"gateways,omitempty"`
	// Statuses are the statuses to write, computed from the inputs alone.
	Statuses Statuses `json:"statuses"`
	// BackendGateways lists, per Backend ("namespace/name"), the Gateways whose routes use
	// it, so the publisher can mark it Programmed once those Envoys acknowledge.
	BackendGateways map[string][]string `json:"backendGateways,omitempty"`
	// Warnings are things a user should hear about as Events, beyond status.
	Warnings []Warning `json:"warnings,omitempty"`
	// ValidUntil is the earliest time after Options.Now at which a certificate checked
	// against the clock becomes valid or expires, so the same inputs would translate
	// differently (zero: no such time). Until then the result stands for its inputs.
	ValidUntil time.Time `json:"-"`
}

// Warning is one Warning Event to emit about an object.
type Warning struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Reason    string `json:"reason"`
	Message   string `json:"message"`
}

// ReasonIgnoredInlineTLS is the Warning Event reason for inline TLS fields that a
// BackendTLSPolicy overrides.
const ReasonIgnoredInlineTLS = "IgnoredInlineTLS"

// Translate computes the IR and statuses for res, using addrs for FQDN destinations.
// Neither res nor addrs may be modified afterwards: a changed object is replaced by
// one with a new resourceVersion (and, for a spec, generation), changed answers come in
// a new map, as the manager's gatherer and the DNS guard do. The Cache relies on it
// to tell what changed since the last translation (cache.go, delta.go).
func Translate(res *egress.Resources, addrs egress.Addresses, opts Options) Result {
	res = withoutNilEntries(res)
	t := newTranslator(res, addrs, opts)
	if d := t.startDelta(res); d != nil {
		t.delta = d
		if result, ok := t.translateDelta(res); ok {
			t.keepBackendIndex()
			return result
		}
		t.keepBackendIndex()
		t = newTranslator(res, addrs, opts)
	}
	defer t.keepBackendIndex()
	if res != nil {
		defer t.prefetch(res.Backends)()
	}
	t.translateAll(res)
	t.finishBackendStatuses()
	t.finishPolicyStatuses()
	t.finishXBackendStatuses()
	t.cache.sweep()
	t.result.ValidUntil = t.validUntil
	for _, s := range t.backends {
		t.result.ValidUntil = earlier(t.result.ValidUntil, s.until)
	}
	t.recordBase(res)
	return t.result
}

// translateDelta translates as a delta (delta.go); false when it gave up.
func (t *translator) translateDelta(res *egress.Resources) (Result, bool) {
	t.translateAll(res)
	if t.delta.failed || !t.sameSecrets() {
		return Result{}, false
	}
	t.finishDeltaStatuses()
	t.finishDelta()
	t.cache.countDelta()
	return t.result, true
}

// translateAll translates the GatewayClasses and Gateways, with their callers.
func (t *translator) translateAll(res *egress.Resources) {
	t.translateGatewayClasses()
	for _, gw := range t.ourGateways() {
		if g, ok := t.translateGateway(gw); ok {
			t.result.Gateways = append(t.result.Gateways, g)
		}
		if t.delta != nil && t.delta.failed {
			return
		}
	}
	callers := Callers(podsOf(res), t.opts.Unrestricted)
	for i := range t.result.Gateways {
		t.result.Gateways[i] = WithCallers(t.result.Gateways[i], callers)
	}
	sort.Slice(t.result.Gateways, func(i, j int) bool { return t.result.Gateways[i].Name < t.result.Gateways[j].Name })
}

func podsOf(res *egress.Resources) []corev1.Pod {
	if res == nil {
		return nil
	}
	return res.Pods
}
