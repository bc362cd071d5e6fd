package bench

import (
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// Names of the generated objects.
const (
	className   = "portcullis"
	gatewayNS   = "gw"
	appsNS      = "apps"
	backendPort = 443
	// benchDomain is the parent of every generated FQDN.
	benchDomain = "bench.example"
)

// workload is a generated cluster: gateways Gateways, each with perGateway mTLS
// Backends (FQDN, HTTPS, a CA bundle Secret and a client certificate Secret of their
// own) and one HTTPRoute per Backend with its own hostname.
type workload struct {
	gateways, perGateway int
	// listenerPort is the Gateway listener port (80 unless a test needs a free one).
	listenerPort int32
	// namespaces, when set, spreads the Backends, their Secrets and HTTPRoutes
	// round-robin over that many tenant namespaces (tenancy.go); all are in appsNS
	// otherwise.
	namespaces int
	// pods is the number of running caller pods, spread the same way.
	pods int
}

func (w workload) String() string {
	s := fmt.Sprintf("gateways=%d/backends=%d", w.gateways, w.gateways*w.perGateway)
	if w.namespaces > 0 || w.pods > 0 {
		s += fmt.Sprintf("/namespaces=%d/pods=%d", w.namespaces, w.pods)
	}
	return s
}

// total is the number of Backends (and HTTPRoutes).
func (w workload) total() int { return w.gateways * w.perGateway }

// resources generates the objects and the DNS guard's answers for them. pairs must hold
// 2*total() certificates.
func (w workload) resources(pairs []keyPair) (*egress.Resources, egress.Addresses) {
	res := &egress.Resources{
		GatewayClasses: []gwapiv1.GatewayClass{gatewayClass()},
		Namespaces:     []corev1.Namespace{namespace(gatewayNS), namespace(appsNS)},
		Pods:           w.callerPods(),
	}
	for n := range w.namespaces {
		res.Namespaces = append(res.Namespaces, namespace(tenantNamespace(n)))
	}
	addrs := egress.Addresses{}
	for g := range w.gateways {
		res.Gateways = append(res.Gateways, w.gateway(g))
		for i := range w.perGateway {
			k := g*w.perGateway + i
			name, ns := objectName(g, i), w.namespaceOf(k)
			be, rt := backend(name, hostname(name)), route(name, gatewayName(g), hostname(name))
			cs, ca := clientSecret(name, pairs[2*k]), caSecret(name, pairs[2*k+1])
			be.Namespace, rt.Namespace, cs.Namespace, ca.Namespace = ns, ns, ns, ns
			res.Backends, res.HTTPRoutes = append(res.Backends, &be), append(res.HTTPRoutes, &rt)
			res.Secrets = append(res.Secrets, cs, ca)
			addrs[hostname(name)] = resolvedTo(publicIP(k))
		}
	}
	return res, addrs
}

func namespace(name string) corev1.Namespace {
	return corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

// loopback is where the local upstreams listen.
var loopback = netip.MustParseAddr("127.0.0.1")

func gatewayClass() gwapiv1.GatewayClass {
	return gwapiv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: className, Generation: 1},
		Spec:       gwapiv1.GatewayClassSpec{ControllerName: egress.ControllerName},
	}
}

func objectName(g, i int) string       { return fmt.Sprintf("b%d-%d", g, i) }
func gatewayName(g int) string         { return fmt.Sprintf("egress-%d", g) }
func hostname(name string) string      { return name + "." + benchDomain }
func clientSecretName(n string) string { return n + "-client" }
func caSecretName(n string) string     { return n + "-ca" }

// publicIP is a distinct public address (93.x.y.z) per index, which the DNS guard would vet.
func publicIP(k int) netip.Addr {
	return netip.AddrFrom4([4]byte{93, byte(1 + k/65536), byte(k / 256 % 256), byte(k % 256)})
}

func resolvedTo(ip netip.Addr) egress.Resolution {
	return egress.Resolution{State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: ip, Expires: time.Now().Add(time.Hour)}}}
}

func (w workload) gateway(g int) gwapiv1.Gateway {
	port := w.listenerPort
	if port == 0 {
		port = 80
	}
	from := gwapiv1.NamespacesFromAll
	return gwapiv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayName(g), Namespace: gatewayNS, Generation: 1},
		Spec: gwapiv1.GatewaySpec{
			GatewayClassName: className,
			Listeners: []gwapiv1.Listener{{
				Name: "http", Port: port, Protocol: gwapiv1.HTTPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}},
			}},
		},
	}
}

// backend is an FQDN Backend originating mutual TLS with its own CA bundle.
func backend(name, host string) egressv1alpha1.Backend {
	return egressv1alpha1.Backend{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appsNS, UID: types.UID("backend-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{
			Type: egressv1alpha1.DestinationTypeFQDN,
			FQDN: &egressv1alpha1.FQDNDestination{
				Hostname: host,
				TLS: &egressv1alpha1.BackendTLS{
					CACertificates:    []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: caSecretName(name)}}},
					ClientCertificate: &egressv1alpha1.CertificateRef{SecretRef: egressv1alpha1.ObjectKeyReference{Name: clientSecretName(name)}},
				},
			},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: backendPort, Protocol: egressv1alpha1.PortProtocolHTTPS}},
		}},
	}
}

// route sends every request for host to the Backend of the same name.
func route(name, gateway, host string) gwapiv1.HTTPRoute {
	ns, group, kind := gwapiv1.Namespace(gatewayNS), gwapiv1.Group(egressv1alpha1.GroupVersion.Group), gwapiv1.Kind("Backend")
	port := gwapiv1.PortNumber(backendPort)
	return gwapiv1.HTTPRoute{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: appsNS, UID: types.UID("route-" + name), Generation: 1, ResourceVersion: "1"},
		Spec: gwapiv1.HTTPRouteSpec{
			CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: gwapiv1.ObjectName(gateway), Namespace: &ns}}},
			Hostnames:       []gwapiv1.Hostname{gwapiv1.Hostname(host)},
			Rules: []gwapiv1.HTTPRouteRule{{BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{
				BackendObjectReference: gwapiv1.BackendObjectReference{Group: &group, Kind: &kind, Name: gwapiv1.ObjectName(name), Port: &port},
			}}}}},
		},
	}
}

func clientSecret(name string, p keyPair) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: clientSecretName(name), Namespace: appsNS, ResourceVersion: "1"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: p.cert, corev1.TLSPrivateKeyKey: p.key},
	}
}

func caSecret(name string, p keyPair) corev1.Secret {
	return corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: caSecretName(name), Namespace: appsNS, ResourceVersion: "1"},
		Data:       map[string][]byte{"ca.crt": p.cert},
	}
}
