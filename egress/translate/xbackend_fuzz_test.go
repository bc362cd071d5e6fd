package translate

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// FuzzXBackend: whatever an XBackend says, the Gateway that routes to it translates and
// builds; an XBackend that asks for TLS never gets a plaintext cluster; its endpoints
// are only the DNS guard's vetted addresses; and its cluster is exactly the cluster of
// the Backend it converts to, but for the names.
//
// make test runs the seeds. To fuzz longer:
//
//	go test ./egress/translate -run '^$' -fuzz FuzzXBackend -fuzztime 5m
func FuzzXBackend(f *testing.F) {
	for _, seed := range xbackendFuzzSeeds() {
		f.Add(seed)
	}
	refs := newXBackendFuzzRefs(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		x := randomXBackend(data)
		res := xbackendFuzzWorld(refs)
		res.XBackends = []gwapixv1alpha1.XBackend{*x}
		gw := translateOne(t, res, x)
		c := clusterNamed(gw, "xbackend/fuzz/x/"+fmt.Sprint(x.Spec.Port.Port))
		checkXBackendCluster(t, x, c)
		if conv, e := convertXBackend(x); e == nil && c != nil {
			checkSameAsBackend(t, x, conv.b, refs, c)
		}
	})
}

// xbackendFuzzSeeds are 64 inputs of random bytes (the same every run).
func xbackendFuzzSeeds() [][]byte {
	r := rand.New(rand.NewPCG(15, 3))
	out := make([][]byte, 64)
	for i := range out {
		out[i] = make([]byte, 32)
		for j := range out[i] {
			out[i][j] = byte(r.UintN(256))
		}
	}
	return out
}

// randomXBackend builds the spec of XBackend fuzz/x from data, a choice per byte. The
// first byte picks a coherent XBackend, as the CRD would let through, or a wild one
// made of good and bad values of every field.
func randomXBackend(data []byte) *gwapixv1alpha1.XBackend {
	p := &picker{data: data}
	wild := pick(p, false, true)
	choose := func(good []string, bad ...string) string {
		if wild {
			return pick(p, append(slices.Clone(good), bad...)...)
		}
		return pick(p, good...)
	}
	x := &gwapixv1alpha1.XBackend{ObjectMeta: metav1.ObjectMeta{Namespace: "fuzz", Name: "x", Generation: 1}}
	x.Spec.Type = gwapixv1alpha1.BackendType(choose([]string{"ExternalHostname"}, "", "Service"))
	if host := choose([]string{"api.example.com", "api.example.com", "unresolved.example.com"}, "", "api.svc", "db.ns.svc.cluster.local", "169.254.169.254", "0x7f000001", "*.example.com", "API.example.com"); host != "" {
		x.Spec.ExternalHostname = &gwapixv1alpha1.ExternalHostnameBackend{Hostname: gwapiv1.PreciseHostname(host)}
	}
	x.Spec.Port.Port = gwapixv1alpha1.PortNumber(map[bool]int{false: pick(p, 443, 80, 5432, 18000), true: pick(p, 443, 0, 70000)}[wild])
	if name := pick(p, "", "https"); name != "" {
		x.Spec.Port.Name = &name
	}
	if proto := choose([]string{"", "HTTP", "HTTP11", "HTTP2", "GRPC", "MCP", "TCP"}, "H2C", "SPDY"); proto != "" {
		x.Spec.Protocol = ptrTo(gwapixv1alpha1.BackendProtocol(proto))
	}
	if mode := choose([]string{"", "None", "ServerOnly", "ServerOnly", "ClientAndServer", "ClientAndServer"}, "Opportunistic"); mode != "" {
		x.Spec.TLS = randomXBackendTLS(p, gwapixv1alpha1.BackendTLSMode(mode), choose)
	}
	return x
}

func randomXBackendTLS(p *picker, mode gwapixv1alpha1.BackendTLSMode, choose func([]string, ...string) string) *gwapixv1alpha1.BackendTLS {
	tls := &gwapixv1alpha1.BackendTLS{Mode: mode}
	if name := choose(map[bool][]string{true: {"client", "client", "nope"}, false: {""}}[mode == gwapixv1alpha1.BackendTLSModeClientAndServer], "", "ca"); name != "" {
		tls.ClientCertificateRef = &gwapiv1.SecretObjectReference{Name: gwapiv1.ObjectName(name)}
		if kind := choose([]string{"", "Secret"}, "ConfigMap"); kind != "" {
			tls.ClientCertificateRef.Kind = ptrTo(gwapiv1.Kind(kind))
		}
		if ns := choose([]string{"", "fuzz"}, "other"); ns != "" {
			tls.ClientCertificateRef.Namespace = ptrTo(gwapiv1.Namespace(ns))
		}
	}
	if mode == gwapixv1alpha1.BackendTLSModeNone && choose([]string{"keep"}, "set") == "keep" {
		return tls
	}
	v := &tls.Validation
	if choose([]string{"System", "CA", ""}, "both") != "System" {
		for range pick(p, 1, 2) {
			v.CACertificateRefs = append(v.CACertificateRefs, gwapiv1.LocalObjectReference{Kind: gwapiv1.Kind(choose([]string{"ConfigMap"}, "Secret", "Service")), Name: gwapiv1.ObjectName(choose([]string{"ca"}, "client", "nope"))})
		}
	}
	if wk := choose([]string{"", "System"}, "Mozilla"); wk != "" && len(v.CACertificateRefs) == 0 || wk == "Mozilla" {
		v.WellKnownCACertificates = ptrTo(gwapiv1.WellKnownCACertificatesType(wk))
	}
	v.Hostname = gwapiv1.PreciseHostname(choose([]string{"api.example.com", "edge.example.com"}, "", "10.0.0.1", "Bad_Name"))
	for range pick(p, 0, 0, 1, 2) {
		v.SubjectAltNames = append(v.SubjectAltNames, gwapiv1.SubjectAltName{Type: gwapiv1.SubjectAltNameType(choose([]string{"Hostname", "URI"}, "IP")),
			Hostname: gwapiv1.Hostname(choose([]string{"*.example.com"}, "")), URI: gwapiv1.AbsoluteURI(choose([]string{"spiffe://example.com/api"}, ""))})
	}
	return tls
}

// picker turns fuzz data into choices: each choice takes one byte (0 once data ends).
type picker struct {
	data []byte
	next int
}

func pick[T any](p *picker, choices ...T) T {
	b := 0
	if p.next < len(p.data) {
		b = int(p.data[p.next])
	}
	p.next++
	return choices[b%len(choices)]
}

// xbackendFuzzRefs are the client certificate and the CA the fuzzed XBackend may name.
type xbackendFuzzRefs struct {
	secret    corev1.Secret
	configMap corev1.ConfigMap
}

func newXBackendFuzzRefs(tb testing.TB) xbackendFuzzRefs {
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", "certs", name))
		if err != nil {
			tb.Fatal(err)
		}
		return b
	}
	return xbackendFuzzRefs{
		secret: corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "client", Namespace: "fuzz"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: read("client.crt"), corev1.TLSPrivateKeyKey: read("client.key")}},
		configMap: corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ca", Namespace: "fuzz"}, Data: map[string]string{"ca.crt": string(read("ca.crt"))}},
	}
}

// xbackendFuzzWorld is a Gateway, a route to XBackend fuzz/x and the objects it may name.
func xbackendFuzzWorld(refs xbackendFuzzRefs) *egress.Resources {
	res := tenantWorld()
	res.HTTPRoutes = append(res.HTTPRoutes, tenantRoute("fuzz", "r", gwapiv1.HTTPRouteSpec{Rules: []gwapiv1.HTTPRouteRule{{
		BackendRefs: []gwapiv1.HTTPBackendRef{{BackendRef: gwapiv1.BackendRef{BackendObjectReference: gwapiv1.BackendObjectReference{
			Group: ptrTo(gwapiv1.Group(gwapixv1alpha1.GroupName)), Kind: ptrTo(gwapiv1.Kind(XBackendKind)), Name: "x"}}}}}}}))
	res.Secrets = []corev1.Secret{*refs.secret.DeepCopy()}
	res.ConfigMaps = []corev1.ConfigMap{*refs.configMap.DeepCopy()}
	return res
}

var fuzzAddrs = egress.Addresses{"api.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.9")}}}}

// translateOne translates res and builds its Gateway, which must succeed.
func translateOne(t *testing.T, res *egress.Resources, x *gwapixv1alpha1.XBackend) ir.Gateway {
	t.Helper()
	result := Translate(res, fuzzAddrs, Options{AddressPolicy: prefixPolicy{netip.MustParsePrefix("10.0.0.0/8")}})
	i := slices.IndexFunc(result.Gateways, func(g ir.Gateway) bool { return g.Name == "gw/egress" })
	if i < 0 {
		t.Fatalf("the Gateway was not translated\n%s", dumpXBackend(x))
	}
	if _, err := envoyconfig.Build(result.Gateways[i], envoyconfig.Options{}); err != nil {
		t.Fatalf("the Gateway's configuration does not build: %v\n%s", err, dumpXBackend(x))
	}
	if _, ok := result.Statuses.XBackends["fuzz/x"]; !ok && len(res.XBackends) > 0 {
		t.Fatalf("the referenced XBackend has no status\n%s", dumpXBackend(x))
	}
	return result.Gateways[i]
}

// checkXBackendCluster: TLS asked for is TLS given, verified; endpoints are vetted ones;
// a name refused by the rules of the Backend CRD gets no cluster.
func checkXBackendCluster(t *testing.T, x *gwapixv1alpha1.XBackend, c *ir.Cluster) {
	t.Helper()
	if c == nil {
		return
	}
	h := x.Spec.ExternalHostname
	if h == nil || checkExternalHostname(string(h.Hostname)) != nil {
		t.Fatalf("a cluster for a refused hostname\n%s", dumpXBackend(x))
	}
	wantsTLS := x.Spec.TLS != nil && x.Spec.TLS.Mode != gwapixv1alpha1.BackendTLSModeNone
	if wantsTLS && (c.TLS == nil || c.TLS.InsecureSkipVerify || !c.TLS.SystemCA && c.TLS.CASecret == "") {
		t.Fatalf("TLS asked for, cluster TLS %+v\n%s", c.TLS, dumpXBackend(x))
	}
	vetted := vettedIPs(fuzzAddrs[string(h.Hostname)])
	for _, ep := range c.Endpoints {
		if !slices.Contains(vetted, netip.MustParseAddr(ep.Address)) || ep.Port != uint32(x.Spec.Port.Port) {
			t.Fatalf("endpoint %v is not a vetted address of %s on port %d\n%s", ep, h.Hostname, x.Spec.Port.Port, dumpXBackend(x))
		}
	}
}

// checkSameAsBackend translates the world with the converted Backend in the XBackend's
// place and compares the two clusters but for their names.
func checkSameAsBackend(t *testing.T, x *gwapixv1alpha1.XBackend, b *egressv1alpha1.Backend, refs xbackendFuzzRefs, c *ir.Cluster) {
	t.Helper()
	res := xbackendFuzzWorld(refs)
	res.Backends = append(res.Backends, b)
	ref := &res.HTTPRoutes[len(res.HTTPRoutes)-1].Spec.Rules[0].BackendRefs[0].BackendRef.BackendObjectReference
	ref.Group, ref.Kind = ptrTo(gwapiv1.Group(egressv1alpha1.GroupVersion.Group)), ptrTo(gwapiv1.Kind(egressv1alpha1.BackendKind))
	want := clusterNamed(translateOne(t, res, x), "backend/fuzz/x/"+b.Spec.Destination.Ports[0].Name)
	if want == nil {
		t.Fatalf("the equivalent Backend has no cluster\n%s", dumpXBackend(x))
	}
	got := *c // edited below: the TLS is copied before its CA secret is renamed
	got.Name, got.Origin.Kind = want.Name, want.Origin.Kind
	if got.TLS != nil && got.TLS.CASecret == "ca/fuzz/x/xbackend" {
		tls := *got.TLS
		tls.CASecret = "ca/fuzz/x/backend"
		got.TLS = &tls
	}
	if !sameYAML(&got, want) {
		t.Fatalf("the XBackend's cluster\n%+v\ndiffers from the Backend's\n%+v\n%s", &got, want, dumpXBackend(x))
	}
}

func clusterNamed(gw ir.Gateway, name string) *ir.Cluster {
	for i := range gw.Clusters {
		if gw.Clusters[i].Name == name {
			return gw.Clusters[i]
		}
	}
	return nil
}

func sameYAML(a, b any) bool {
	x, err1 := yaml.Marshal(a)
	y, err2 := yaml.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func dumpXBackend(x *gwapixv1alpha1.XBackend) string {
	out, err := yaml.Marshal(x.Spec)
	if err != nil {
		return err.Error()
	}
	return string(out)
}

// TestXBackendFuzzSeedsReachBothWays keeps the seeds of FuzzXBackend honest: many give
// an XBackend cluster in the Gateway (so the TLS, endpoint and equivalence checks run)
// and many a refusal.
func TestXBackendFuzzSeedsReachBothWays(t *testing.T) {
	clusters, refused := 0, 0
	refs := newXBackendFuzzRefs(t)
	for _, seed := range xbackendFuzzSeeds() {
		x := randomXBackend(seed)
		if _, e := convertXBackend(x); e != nil {
			refused++
			continue
		}
		res := xbackendFuzzWorld(refs)
		res.XBackends = []gwapixv1alpha1.XBackend{*x}
		gws := Translate(res, fuzzAddrs, Options{}).Gateways
		if len(gws) == 1 && clusterNamed(gws[0], "xbackend/fuzz/x/"+fmt.Sprint(x.Spec.Port.Port)) != nil {
			clusters++
		}
	}
	if clusters < 16 || refused < 16 {
		t.Errorf("of %d seeds, %d give a cluster and %d are refused; want at least 16 of each", len(xbackendFuzzSeeds()), clusters, refused)
	}
}
