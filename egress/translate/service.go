package translate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// serviceKey is a Service port referenced directly by a route.
type serviceKey struct {
	name types.NamespacedName
	port int32
}

// translatedService is the cluster for a Service port referenced by a route.
type translatedService struct {
	cluster ir.Cluster
	secrets []ir.Secret
	err     *refError
}

// serviceRef resolves a backendRef to a Service: its ready endpoints and, when a
// BackendTLSPolicy targets it, TLS as GEP-1897 defines (SNI = policy hostname, no client
// certificate). An ExternalName Service is resolved through the DNS guard like an FQDN.
func (t *translator) serviceRef(g *gatewayContext, n types.NamespacedName, port *gwapiv1.PortNumber) (*ir.Cluster, []ir.Secret, *refError) {
	if port == nil {
		return nil, nil, newRefError(string(gwapiv1.RouteReasonUnsupportedValue), "backendRef.port is required for a Service")
	}
	t.recordAncestorsForService(n, g.gw)
	key := serviceKey{name: n, port: int32(*port)}
	ts, ok := t.serviceCache[key]
	if !ok {
		ts = t.translateService(key)
		t.serviceCache[key] = ts
	}
	if ts.err != nil {
		return nil, nil, ts.err
	}
	return &ts.cluster, ts.secrets, nil
}

func (t *translator) translateService(key serviceKey) *translatedService {
	svc, ok := t.services[key.name]
	if !ok {
		return &translatedService{err: newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Service %s not found", key.name)}
	}
	protocol, err := serviceProtocol(svc, key.port)
	if err != nil {
		return &translatedService{err: err}
	}
	c := ir.Cluster{
		Name:     fmt.Sprintf("service/%s/%d", key.name, key.port),
		Origin:   ir.ClusterOrigin{Kind: ir.OriginService, Namespace: key.name.Namespace, Name: key.name.Name, Port: uint32(key.port)},
		Protocol: protocol,
	}
	if c.Endpoints, err = t.serviceAddresses(key.name, key.port); err != nil {
		return &translatedService{err: err}
	}
	ts := &translatedService{cluster: c}
	if p := t.policyFor(key.name, servicePortName(svc, key.port)); p != nil {
		verify, secrets, rerr := t.policyVerification(p)
		if rerr != nil {
			// An invalid policy never falls back to plaintext: the share fails with 500.
			return &translatedService{err: newRefError(ReasonInvalidBackend, "Service %s: %s", key.name, rerr.msg)}
		}
		if rerr := tightenVersions(&verify, p); rerr != nil {
			return &translatedService{err: newRefError(ReasonInvalidBackend, "Service %s: %s", key.name, rerr.msg)}
		}
		ts.cluster.TLS, ts.secrets = &verify, secrets
	}
	return ts
}

// serviceAddresses are the addresses of a Service port a route may send to: the vetted
// addresses of an ExternalName Service's name, or the ready endpoints of any other.
func (t *translator) serviceAddresses(n types.NamespacedName, port int32) ([]ir.Endpoint, *refError) {
	svc, ok := t.services[n]
	if !ok {
		return nil, newRefError(string(gwapiv1.RouteReasonBackendNotFound), "Service %s not found", n)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		eps := vettedEndpoints(t.addrs[svc.Spec.ExternalName], uint32(port))
		return eps, t.refuseOwnEndpoints(n, eps)
	}
	eps, err := t.serviceEndpoints(svc, port)
	if err != nil && err.reason == egressv1alpha1.ReasonServiceNotFound {
		err.reason = string(gwapiv1.RouteReasonBackendNotFound) // no such port
	}
	return eps, err // or ForbiddenDestination: refused endpoints
}
