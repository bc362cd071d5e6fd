package translate

import (
	"fmt"
	"net/netip"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// destination is a Backend's destination member, whichever type it is.
type destination struct {
	tls      *egressv1alpha1.BackendTLS
	protocol *egressv1alpha1.BackendProtocol
	field    string // the member's path, for messages
	summary  string // for status.destination
	// hostname is the name the DNS guard resolves (FQDN, or an ExternalName Service's name).
	hostname string
	sni      string
	ip       netip.Addr
	service  *corev1.Service
	svcName  types.NamespacedName
}

func destinationOf(b *egressv1alpha1.Backend) destination {
	d := b.Spec.Destination
	switch {
	case d.FQDN != nil:
		h := strings.ToLower(d.FQDN.Hostname)
		return destination{tls: d.FQDN.TLS, protocol: d.FQDN.Protocol, field: "spec.destination.fqdn", summary: h, hostname: h, sni: h}
	case d.IP != nil:
		ip, _ := netip.ParseAddr(d.IP.Address)
		return destination{tls: d.IP.TLS, protocol: d.IP.Protocol, field: "spec.destination.ip", summary: d.IP.Address, ip: ip}
	case d.KubernetesService != nil:
		n := types.NamespacedName{Namespace: b.Namespace, Name: d.KubernetesService.Name}
		return destination{tls: d.KubernetesService.TLS, protocol: d.KubernetesService.Protocol, field: "spec.destination.kubernetesService",
			summary: "service/" + n.Name, svcName: n, sni: n.Name + "." + n.Namespace + ".svc"}
	}
	return destination{field: "spec.destination"}
}

// resolveDestination finds what the destination points at: the Service (and, for an
// ExternalName Service, the name to resolve) or a vetted IP address.
func (t *translator) resolveDestination(b *egressv1alpha1.Backend, d *destination) *refError {
	switch {
	case d.svcName.Name != "":
		svc, ok := t.services[d.svcName]
		if !ok {
			return newRefError(egressv1alpha1.ReasonServiceNotFound, "Service %s not found", d.svcName)
		}
		d.service = svc
		if svc.Spec.Type == corev1.ServiceTypeExternalName {
			d.hostname = strings.TrimSuffix(strings.ToLower(svc.Spec.ExternalName), ".")
			d.sni = d.hostname
		}
	case d.ip.IsValid():
		if t.opts.AddressPolicy == nil {
			return newRefError(egressv1alpha1.ReasonForbiddenDestination, "%s.address %s: no address policy is configured, so IP destinations are refused", d.field, d.ip)
		}
		if ok, reason := t.opts.AddressPolicy.CheckAddr(d.ip); !ok {
			return newRefError(egressv1alpha1.ReasonForbiddenDestination, "%s.address %s is refused by the DNS guard's address policy: %s", d.field, d.ip, reason)
		}
	case d.hostname == "":
		return newRefError(egressv1alpha1.ReasonInvalid, "spec.destination has no fqdn, ip or kubernetesService")
	}
	return t.refuseOwnDestination(b, *d)
}

// endpoints returns the addresses Envoy may use for one Backend port.
func (t *translator) endpoints(d destination, port egressv1alpha1.BackendPort) ([]ir.Endpoint, *refError) {
	switch {
	case d.hostname != "":
		return vettedEndpoints(t.resolution(d.hostname), uint32(port.Port)), nil
	case d.ip.IsValid():
		return []ir.Endpoint{{Address: d.ip.String(), Port: uint32(port.Port)}}, nil
	case d.service != nil:
		return t.serviceEndpoints(d.service, port.Port)
	}
	return nil, nil
}

func vettedEndpoints(res egress.Resolution, port uint32) []ir.Endpoint {
	out := make([]ir.Endpoint, 0, len(res.Vetted))
	for _, v := range res.Vetted {
		out = append(out, ir.Endpoint{Address: v.IP.String(), Port: port})
	}
	return out
}

// serviceEndpoints returns the ready endpoints of a Service port, with the target port
// each EndpointSlice gives for that port's name. Only IPv4 and IPv6 slices count: an
// FQDN slice holds names, which Envoy would be handed as addresses. An address the
// endpoint policy refuses (checkEndpoint) refuses the whole Service, so that a bad
// endpoint is seen at once rather than hidden behind the good ones: the Backend is not
// Accepted, and a route to the Service has ResolvedRefs=False (its share answers 500).
func (t *translator) serviceEndpoints(svc *corev1.Service, port int32) ([]ir.Endpoint, *refError) {
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
		}
	}
	if svcPort == nil {
		return nil, newRefError(egressv1alpha1.ReasonServiceNotFound, "Service %s has no port %d", nameOf(svc), port)
	}
	var out []ir.Endpoint
	refused := refusedEndpoints{}
	for _, slice := range t.slices[nameOf(svc)] {
		target, ok := slicePort(slice, svcPort.Name)
		if !ok {
			continue
		}
		if !ipSlice(slice) {
			refuseSlice(refused, slice)
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				if ok, reason := t.checkEndpoint(a); !ok {
					refused[a] = reason
					continue
				}
				if what := t.ownComponent(netip.MustParseAddr(a), target); what != "" { // checkEndpoint parsed it
					refused[a] = fmt.Sprintf("port %d is %s", target, what)
					continue
				}
				out = append(out, ir.Endpoint{Address: a, Port: target})
			}
		}
	}
	if e := refused.error(nameOf(svc)); e != nil {
		return nil, e
	}
	sortEndpoints(out)
	return out, nil
}

// refuseSlice refuses every address of a slice that is not of IP addresses. Envoy would
// take an FQDN slice's names ("localhost", "metadata.google.internal") as STATIC
// addresses and fail the whole build, and no Kubernetes controller writes such slices
// any more: only a hand-written one has them, so it is refused where it is seen.
func refuseSlice(refused refusedEndpoints, s *discoveryv1.EndpointSlice) {
	for _, ep := range s.Endpoints {
		for _, a := range ep.Addresses {
			refused[a] = fmt.Sprintf("EndpointSlice %s has addressType %s; only IPv4 and IPv6 slices are served", s.Name, s.AddressType)
		}
	}
}

func ipSlice(s *discoveryv1.EndpointSlice) bool {
	return s.AddressType == discoveryv1.AddressTypeIPv4 || s.AddressType == discoveryv1.AddressTypeIPv6
}

func slicePort(s *discoveryv1.EndpointSlice, name string) (uint32, bool) {
	for _, p := range s.Ports {
		if p.Port != nil && (p.Name == nil && name == "" || p.Name != nil && *p.Name == name) {
			return uint32(*p.Port), true
		}
	}
	return 0, false
}

func sortEndpoints(eps []ir.Endpoint) {
	sort.Slice(eps, func(i, j int) bool {
		if eps[i].Address != eps[j].Address {
			return eps[i].Address < eps[j].Address
		}
		return eps[i].Port < eps[j].Port
	})
}

// servicePortName returns the name of the Service port with the given number.
func servicePortName(svc *corev1.Service, port int32) string {
	if svc == nil {
		return ""
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == port {
			return p.Name
		}
	}
	return fmt.Sprint(port)
}
