package translate

import (
	"fmt"
	"net/netip"
	"slices"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Portcullis' own components listen beside Envoy: on a host the xDS server (which hands
// out every tenant's secrets), the manager's metrics and health ports, every Envoy's
// admin interface (whose /quitquitquit stops it) and, under `portcullis local`, etcd and
// kube-apiserver; in a pod, Envoy's admin interface. An --allow-cidr broad enough to
// admit loopback (the local demo allows 127.0.0.0/8) must not turn the gateway into a
// client of them, so a destination there is refused whatever the address policy says.

// ownComponent names the component of Options.OwnPorts that a connection to a:port
// would reach, or "". Components bind loopback or every interface, so the addresses
// are loopback, the unspecified address (which connects to this machine) and
// Options.OwnAddresses.
func (t *translator) ownComponent(a netip.Addr, port uint32) string {
	what, held := t.opts.OwnPorts[port]
	if !held {
		return ""
	}
	a = a.Unmap().WithZone("")
	if a.IsLoopback() || a.IsUnspecified() || slices.Contains(t.opts.OwnAddresses, a) {
		return what
	}
	return ""
}

// refuseOwnDestination refuses a Backend whose IP, or one of whose vetted addresses, is
// one of Portcullis' own components at one of the Backend's ports.
func (t *translator) refuseOwnDestination(b *egressv1alpha1.Backend, d destination) *refError {
	if len(t.opts.OwnPorts) == 0 {
		return nil
	}
	addrs := []netip.Addr{d.ip}
	if d.hostname != "" {
		addrs = vettedIPs(t.resolution(d.hostname))
	}
	for i, p := range b.Spec.Destination.Ports {
		for _, a := range addrs {
			what := t.ownComponent(a, uint32(p.Port))
			if what == "" {
				continue
			}
			subject := d.field + ".address " + a.String()
			if d.hostname != "" {
				subject = d.field + " " + d.hostname + " resolves to " + a.String() + ", and"
			}
			return newRefError(egressv1alpha1.ReasonForbiddenDestination,
				"%s port %d (spec.destination.ports[%d]) is %s; Portcullis never sends traffic to its own components, whatever --allow-cidr allows",
				subject, p.Port, i, what)
		}
	}
	return nil
}

// refuseOwnEndpoints refuses the vetted endpoints of an ExternalName Service when one
// is one of Portcullis' own components.
func (t *translator) refuseOwnEndpoints(svc fmt.Stringer, eps []ir.Endpoint) *refError {
	refused := refusedEndpoints{}
	for _, ep := range eps {
		if what := t.ownComponent(netip.MustParseAddr(ep.Address), ep.Port); what != "" {
			refused[ep.Address] = fmt.Sprintf("port %d is %s", ep.Port, what)
		}
	}
	return refused.error(svc)
}
