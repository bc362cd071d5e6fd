package translate

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/randfill"
	"sigs.k8s.io/yaml"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// hostileVocabulary adds to vocabulary the values tenants were seen to break a Gateway
// with, and their neighbours: regexes RE2 refuses or finds too large, header names and
// values Envoy refuses, names and paths with odd bytes.
var hostileVocabulary = append(slices.Clone(vocabulary),
	"b0", "b1", "fuzz", "t0", "t1", "/(unclosed", "/[a-z]{1,1000}x", `\x{100}`, `\p{Greek}`, "(?i)a", "a{2,1}",
	"bad header", "x-ok", "Host", ":authority", ":path", "x\r\ny", "a\x00b", "té", "x-envoy-original-path",
	"Authorization", "Bearer ", "%2f", "/a/../b", "/a?b", "/a#b", "//", " ", "\t", "*.", "a..b", "ä.example.com",
	"api.example.com:443", "[::1]", "metadata.google.internal", "localhost", "IPv4", "IPv6", "127.0.0.1", "169.254.169.254",
)

// FuzzTenantCannotBreakTheGateway: whatever one tenant writes (random HTTPRoutes with
// matches, filters and headers, Backends with any fields, Services, EndpointSlices and
// Secrets, all in namespace "fuzz"), translating and building the shared Gateway never
// fails and never panics, and another tenant's route is always in it. Anything Envoy's
// configuration would refuse must be refused on the tenant's object at translation.
//
// make test runs the seed corpus (testdata/fuzz/FuzzTenantCannotBreakTheGateway). To
// fuzz longer:
//
//	go test ./egress/translate -run '^$' -fuzz FuzzTenantCannotBreakTheGateway -fuzztime 5m
//
// A failure saves its input under testdata/fuzz; keep it there as a regression seed.
func FuzzTenantCannotBreakTheGateway(f *testing.F) {
	for seed := range 16 {
		f.Add([]byte(fmt.Sprintf("tenant seed %d: %s", seed, strings.Repeat("x", seed*7))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		res := tenantWorld()
		tenant := randomTenant(data)
		res.HTTPRoutes = append(res.HTTPRoutes, tenant.HTTPRoutes...)
		res.TLSRoutes = append(res.TLSRoutes, tenant.TLSRoutes...)
		res.TCPRoutes = tenant.TCPRoutes
		res.Backends = append(res.Backends, tenant.Backends...)
		res.Services, res.EndpointSlices, res.Secrets = tenant.Services, tenant.EndpointSlices, tenant.Secrets
		addrs := egress.Addresses{"api.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.9")}}}}
		result := Translate(res, addrs, Options{AddressPolicy: prefixPolicy{netip.MustParsePrefix("10.0.0.0/8")}})
		i := slices.IndexFunc(result.Gateways, func(g ir.Gateway) bool { return g.Name == "gw/egress" })
		if i < 0 {
			t.Fatalf("the Gateway was not translated\n%s", dumpTenant(tenant))
		}
		gw := result.Gateways[i]
		if !slices.Contains(routeOwners(gw), "good/api") {
			t.Fatalf("the other tenant's route good/api is not in the Gateway\n%s", dumpTenant(tenant))
		}
		if !goodStreamServed(gw) {
			t.Fatalf("the other tenant's TLSRoute good/api does not take good.example.com in its table\n%s", dumpTenant(tenant))
		}
		if _, err := envoyconfig.Build(gw, envoyconfig.Options{}); err != nil {
			t.Fatalf("the Gateway's configuration does not build: %v\n%s", err, dumpTenant(tenant))
		}
	})
}

// tenantWorld is the shared Gateway (any namespace may attach) and the well-behaved
// tenant "good" with one route to one Backend.
func tenantWorld() *egress.Resources {
	from := gwapiv1.NamespacesFromAll
	passthrough := gwapiv1.TLSModePassthrough
	gwNS := gwapiv1.Namespace("gw")
	return &egress.Resources{
		GatewayClasses: []gwapiv1.GatewayClass{{ObjectMeta: metav1.ObjectMeta{Name: "portcullis"},
			Spec: gwapiv1.GatewayClassSpec{ControllerName: "portcullis.io/gateway-controller"}}},
		Gateways: []gwapiv1.Gateway{{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"},
			Spec: gwapiv1.GatewaySpec{GatewayClassName: "portcullis", Listeners: []gwapiv1.Listener{{
				Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}}}, {
				Name: "tls", Port: 443, Protocol: gwapiv1.TLSProtocolType, TLS: &gwapiv1.ListenerTLSConfig{Mode: &passthrough},
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}}}, {
				Name: "tcp", Port: 5432, Protocol: gwapiv1.TCPProtocolType,
				AllowedRoutes: &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}}}}}}},
		Backends: []*egressv1alpha1.Backend{{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "good"},
			Spec: egressv1alpha1.BackendSpec{Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN,
				FQDN:  &egressv1alpha1.FQDNDestination{Hostname: "api.example.com"},
				Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}, {Name: "tls", Port: 8443, Protocol: egressv1alpha1.PortProtocolTLS}}}}}},
		TLSRoutes: []gwapiv1.TLSRoute{{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "good", Generation: 1},
			Spec: gwapiv1.TLSRouteSpec{CommonRouteSpec: gwapiv1.CommonRouteSpec{ParentRefs: []gwapiv1.ParentReference{{Name: "egress", Namespace: &gwNS}}},
				Hostnames: []gwapiv1.Hostname{"good.example.com"},
				Rules: []gwapiv1.TLSRouteRule{{BackendRefs: []gwapiv1.BackendRef{{BackendObjectReference: gwapiv1.BackendObjectReference{
					Group: ptrTo(gwapiv1.Group("egress.portcullis.io")), Kind: ptrTo(gwapiv1.Kind("Backend")), Name: "api", Port: ptrTo(gwapiv1.PortNumber(8443))}}}}}}}},
		HTTPRoutes: []*gwapiv1.HTTPRoute{tenantRoute("good", "api", gwapiv1.HTTPRouteSpec{
			Hostnames: []gwapiv1.Hostname{"good.example.com"},
			Rules: []gwapiv1.HTTPRouteRule{{BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{
				BackendObjectReference: gwapiv1.BackendObjectReference{Group: ptrTo(gwapiv1.Group("egress.portcullis.io")), Kind: ptrTo(gwapiv1.Kind("Backend")), Name: "api"}}}}}}})},
	}
}

// randomTenant fills the objects of namespace "fuzz" from data. Names, namespaces and
// parents are set so that the objects reach the Gateway and refer to each other.
func randomTenant(data []byte) *egress.Resources {
	tenant := &egress.Resources{}
	randfill.NewFromGoFuzz(data).NilChance(0.3).NumElements(0, 3).Funcs(
		func(s *string, c randfill.Continue) { *s = hostileVocabulary[c.Intn(len(hostileVocabulary))] },
	).Fill(tenant)
	ns := gwapiv1.Namespace("gw")
	tenant.HTTPRoutes = withoutNil(tenant.HTTPRoutes) // the gatherer never hands out a nil route
	for i, r := range tenant.HTTPRoutes {
		r.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: "fuzz", Generation: 1}
		r.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "egress", Namespace: &ns}}
	}
	for i := range tenant.TLSRoutes {
		r := &tenant.TLSRoutes[i]
		r.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: "fuzz", Generation: 1}
		r.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "egress", Namespace: &ns}}
	}
	for i := range tenant.TCPRoutes {
		r := &tenant.TCPRoutes[i]
		r.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("r%d", i), Namespace: "fuzz", Generation: 1}
		r.Spec.ParentRefs = []gwapiv1.ParentReference{{Name: "egress", Namespace: &ns}}
	}
	for i := range tenant.Backends {
		if tenant.Backends[i] == nil { // a tenant's Backend is an object, never nothing
			tenant.Backends[i] = &egressv1alpha1.Backend{}
		}
		tenant.Backends[i].ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "fuzz", Generation: 1}
	}
	for i := range tenant.Services {
		tenant.Services[i].ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: "fuzz"}
	}
	for i := range tenant.EndpointSlices {
		s := &tenant.EndpointSlices[i]
		s.ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("s%d", i), Namespace: "fuzz",
			Labels: map[string]string{discoveryv1.LabelServiceName: fmt.Sprintf("b%d", i%2)}}
	}
	for i := range tenant.Secrets {
		tenant.Secrets[i].ObjectMeta = metav1.ObjectMeta{Name: fmt.Sprintf("t%d", i), Namespace: "fuzz"}
		tenant.Secrets[i].Type = corev1.SecretTypeOpaque
	}
	return &egress.Resources{HTTPRoutes: tenant.HTTPRoutes, TLSRoutes: tenant.TLSRoutes, TCPRoutes: tenant.TCPRoutes, Backends: tenant.Backends, Services: tenant.Services,
		EndpointSlices: tenant.EndpointSlices, Secrets: tenant.Secrets}
}

func tenantRoute(ns, name string, spec gwapiv1.HTTPRouteSpec) *gwapiv1.HTTPRoute {
	gwNS := gwapiv1.Namespace("gw")
	spec.ParentRefs = []gwapiv1.ParentReference{{Name: "egress", Namespace: &gwNS}}
	return &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Generation: 1}, Spec: spec}
}

// routeOwners lists the HTTPRoutes ("namespace/name") with a route in the Gateway.
func routeOwners(gw ir.Gateway) []string {
	var out []string
	add := func(vhs []ir.VirtualHost) {
		for _, vh := range vhs {
			for _, r := range vh.Routes {
				out = append(out, ir.HTTPRouteOf(r.Name))
			}
		}
	}
	for _, l := range gw.Listeners {
		add(l.VirtualHosts)
		for _, tn := range l.Tenants {
			add(tn.VirtualHosts)
		}
	}
	return out
}

// goodStreamServed tells whether good's TLSRoute takes good.example.com in good's table.
func goodStreamServed(gw ir.Gateway) bool {
	for _, l := range gw.Listeners {
		for _, tn := range l.Tenants {
			for _, r := range tn.Streams {
				if tn.Namespace == "good" && r.Name == "tlsroute/good/api" && slices.Contains(r.ServerNames, "good.example.com") {
					return true
				}
			}
		}
	}
	return false
}

// dumpTenant shows the tenant's objects in a failure.
func dumpTenant(tenant *egress.Resources) string {
	out, err := yaml.Marshal(tenant)
	if err != nil {
		return err.Error()
	}
	return string(out)
}
