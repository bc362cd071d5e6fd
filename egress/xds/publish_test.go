package xds

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

const testGateway = "team-a/egress"

// fullResources has every type: two listeners (one TLS), their routes, two EDS clusters
// (one with upstream TLS) with endpoints, and the three secrets they reference.
func fullResources(t *testing.T, cert xdstest.Cert) envoyconfig.Resources {
	return envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{
			httpListener(t, "http", 10080, "http", ""),
			httpListener(t, "https", 10443, "https", "gateway-cert"),
		},
		Routes: []*routev3.RouteConfiguration{directRoute("http", "a"), directRoute("https", "b")},
		Clusters: []*clusterv3.Cluster{
			edsCluster(t, "plain", "", ""),
			edsCluster(t, "mtls", "client-cert", "upstream-ca"),
		},
		Endpoints: []*endpointv3.ClusterLoadAssignment{endpoints("plain", 8080), endpoints("mtls", 8443)},
		Secrets: []*tlsv3.Secret{
			certSecret("gateway-cert", cert),
			certSecret("client-cert", cert),
			caSecret("upstream-ca", cert),
		},
	}
}

func versionOf(res envoyconfig.Resources) (string, error) {
	a, err := analyze(res.ByType(), nil)
	if err != nil {
		return "", err
	}
	return a.version(), nil
}

func reversed[T any](in []T) []T {
	out := make([]T, len(in))
	for i, v := range in {
		out[len(in)-1-i] = v
	}
	return out
}

func TestPublishVersionIsContentAddressed(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	base := fullResources(t, cert)
	tests := []struct {
		name     string
		edit     func(r *envoyconfig.Resources)
		wantSame bool
	}{
		{
			name: "same resources in reverse order",
			edit: func(r *envoyconfig.Resources) {
				r.Listeners, r.Routes, r.Clusters = reversed(r.Listeners), reversed(r.Routes), reversed(r.Clusters)
				r.Endpoints, r.Secrets = reversed(r.Endpoints), reversed(r.Secrets)
			},
			wantSame: true,
		},
		{
			name:     "equal resources built again",
			edit:     func(r *envoyconfig.Resources) { *r = fullResources(t, cert) },
			wantSame: true,
		},
		{
			name:     "a direct response body changes",
			edit:     func(r *envoyconfig.Resources) { r.Routes[0] = directRoute("http", "changed") },
			wantSame: false,
		},
		{
			name:     "an endpoint port changes",
			edit:     func(r *envoyconfig.Resources) { r.Endpoints[0] = endpoints("plain", 9090) },
			wantSame: false,
		},
		{
			name: "a certificate is rotated under the same secret name",
			edit: func(r *envoyconfig.Resources) {
				r.Secrets[0] = certSecret("gateway-cert", xdstest.SelfSignedCert(t, "gateway"))
			},
			wantSame: false,
		},
	}
	want, err := versionOf(base)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != versionLength {
		t.Fatalf("version %q has %d characters, want %d", want, len(want), versionLength)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := fullResources(t, cert)
			tt.edit(&res)
			got, err := versionOf(res)
			if err != nil {
				t.Fatal(err)
			}
			if (got == want) != tt.wantSame {
				t.Fatalf("version %s vs base %s: same = %v, want %v", got, want, got == want, tt.wantSame)
			}
		})
	}
}

func TestPublishUnchangedContentChangesNothing(t *testing.T) {
	s := New(testr.New(t))
	cert := xdstest.SelfSignedCert(t, "gateway")
	res := fullResources(t, cert)

	v1, changed, err := s.Publish(testGateway, res)
	if err != nil || !changed {
		t.Fatalf("first publish: version %q changed %v err %v, want a change", v1, changed, err)
	}
	reordered := res
	reordered.Listeners, reordered.Secrets = reversed(res.Listeners), reversed(res.Secrets)
	v2, changed, err := s.Publish(testGateway, reordered)
	if err != nil || changed || v2 != v1 {
		t.Fatalf("same content again: version %q changed %v err %v, want %q unchanged", v2, changed, err, v1)
	}
	res.Routes = []*routev3.RouteConfiguration{directRoute("http", "new"), directRoute("https", "b")}
	v3, changed, err := s.Publish(testGateway, res)
	if err != nil || !changed || v3 == v1 {
		t.Fatalf("new content: version %q changed %v err %v, want a new version", v3, changed, err)
	}
	if got := s.Status(testGateway); got.Version != v3 || got.Resources[resource.SecretType] != 3 {
		t.Fatalf("status = %+v, want version %s with 3 secrets", got, v3)
	}
	snap, err := s.cache.GetSnapshot(testGateway)
	if err != nil || snap.GetVersion(resource.RouteType) != v3 {
		t.Fatalf("cache serves %v (err %v), want version %s", snap, err, v3)
	}
}

func TestPublishRefusesInconsistentSnapshot(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	tests := []struct {
		name    string
		edit    func(r *envoyconfig.Resources)
		wantErr string
	}{
		{
			name:    "listener names a route configuration that is missing",
			edit:    func(r *envoyconfig.Resources) { r.Routes = r.Routes[:1] },
			wantErr: `RouteConfiguration "https" is referenced but missing`,
		},
		{
			name: "route configuration that no listener names",
			edit: func(r *envoyconfig.Resources) {
				r.Routes = append(r.Routes, directRoute("orphan", "x"))
			},
			wantErr: `RouteConfiguration "orphan" is not referenced`,
		},
		{
			name:    "EDS cluster without its endpoints",
			edit:    func(r *envoyconfig.Resources) { r.Endpoints = r.Endpoints[1:] },
			wantErr: `ClusterLoadAssignment "plain" is referenced but missing`,
		},
		{
			name: "endpoints of no cluster",
			edit: func(r *envoyconfig.Resources) {
				r.Endpoints = append(r.Endpoints, endpoints("gone", 1))
			},
			wantErr: `ClusterLoadAssignment "gone" is not referenced`,
		},
		{
			name:    "listener certificate secret is missing",
			edit:    func(r *envoyconfig.Resources) { r.Secrets = r.Secrets[1:] },
			wantErr: `Secret "gateway-cert" is referenced but missing`,
		},
		{
			name:    "upstream CA secret is missing",
			edit:    func(r *envoyconfig.Resources) { r.Secrets = r.Secrets[:2] },
			wantErr: `Secret "upstream-ca" is referenced but missing`,
		},
		{
			name: "secret that nothing references",
			edit: func(r *envoyconfig.Resources) {
				r.Secrets = append(r.Secrets, certSecret("unused", cert))
			},
			wantErr: `Secret "unused" is not referenced`,
		},
		{
			name: "many missing secrets are counted, not all listed",
			edit: func(r *envoyconfig.Resources) {
				for i := range 8 {
					r.Listeners = append(r.Listeners, httpListener(t, "tls-"+strconv.Itoa(i), uint32(20000+i), "https", "cert-"+strconv.Itoa(i)))
				}
			},
			wantErr: `Secret "cert-0", "cert-1", "cert-2", "cert-3", "cert-4" and 3 more are referenced but missing`,
		},
		{
			name: "two clusters with one name",
			edit: func(r *envoyconfig.Resources) {
				r.Clusters = append(r.Clusters, edsCluster(t, "plain", "", ""))
			},
			wantErr: `two Cluster resources are named "plain"`,
		},
		{
			name:    "nil listener",
			edit:    func(r *envoyconfig.Resources) { r.Listeners = append(r.Listeners, nil) },
			wantErr: "Listener #2 is nil",
		},
		{
			name: "secret that fails the proto constraints",
			edit: func(r *envoyconfig.Resources) {
				r.Secrets[0].GetTlsCertificate().CertificateChain = &corev3.DataSource{
					Specifier: &corev3.DataSource_Filename{Filename: ""},
				}
			},
			wantErr: `Secret "gateway-cert" is invalid`,
		},
		{
			name:    "listener without a name",
			edit:    func(r *envoyconfig.Resources) { r.Listeners[0].Name = "" },
			wantErr: "has no name",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testr.New(t))
			good, _, err := s.Publish(testGateway, fullResources(t, cert))
			if err != nil {
				t.Fatalf("publish the good snapshot: %v", err)
			}
			bad := fullResources(t, cert)
			tt.edit(&bad)
			version, changed, err := s.Publish(testGateway, bad)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("publish = %q, %v, %v; want an error containing %q", version, changed, err, tt.wantErr)
			}
			if changed {
				t.Errorf("a refused publish reports a change")
			}
			snap, err := s.cache.GetSnapshot(testGateway)
			if err != nil || snap.GetVersion(resource.ListenerType) != good {
				t.Errorf("cache serves %v (err %v), want the last good version %s", snap, err, good)
			}
			if got := s.Status(testGateway).Version; got != good {
				t.Errorf("status version = %s, want the last good %s", got, good)
			}
		})
	}
}

func TestPublishRefusesBadGatewayName(t *testing.T) {
	s := New(testr.New(t))
	for _, gateway := range []string{"", "egress", "a/b/c", "/egress", "ns/"} {
		if _, _, err := s.Publish(gateway, envoyconfig.Resources{}); err == nil {
			t.Errorf("Publish(%q) succeeded, want an error", gateway)
		}
	}
}

func TestRemoveForgetsTheSnapshot(t *testing.T) {
	s := New(testr.New(t))
	res := helloResources(t, 10080, "hello")
	v1, _, err := s.Publish(testGateway, res)
	if err != nil {
		t.Fatal(err)
	}
	s.Remove(testGateway)
	if _, err := s.cache.GetSnapshot(testGateway); err == nil {
		t.Errorf("the cache still has a snapshot after Remove")
	}
	if got := s.Status(testGateway); got.Version != "" || len(got.Resources) != 0 {
		t.Errorf("status after Remove = %+v, want empty", got)
	}
	v2, changed, err := s.Publish(testGateway, res)
	if err != nil || !changed || v2 != v1 {
		t.Fatalf("publish after Remove = %q, %v, %v; want %q published again", v2, changed, err, v1)
	}
}

// BenchmarkPublish10000 publishes a Gateway of 10,000 EDS clusters with mutual TLS
// (client certificate and CA by SDS), their endpoints and their 20,000 secrets, one
// endpoint port changing per iteration: either only that resource is new ("one
// resource replaced", an incremental translator) or every resource is ("all resources
// rebuilt"). Each type comes in name order, as the builders hand it over.
func BenchmarkPublish10000(b *testing.B) {
	const n = 10000
	cert := xdstest.SelfSignedCert(b, "bench")
	build := func() envoyconfig.Resources {
		res := envoyconfig.Resources{
			Listeners: []*listenerv3.Listener{httpListener(b, "http", 10080, "http", "")},
			Routes:    []*routev3.RouteConfiguration{directRoute("http", "x")},
		}
		for i := range n {
			name := fmt.Sprintf("backend-%05d", i)
			res.Clusters = append(res.Clusters, edsCluster(b, name, name+"-cert", name+"-ca"))
			res.Endpoints = append(res.Endpoints, endpoints(name, 443))
			res.Secrets = append(res.Secrets, caSecret(name+"-ca", cert), certSecret(name+"-cert", cert))
		}
		return res
	}
	for _, rebuild := range []bool{false, true} {
		name := map[bool]string{false: "one resource replaced", true: "all resources rebuilt"}[rebuild]
		b.Run(name, func(b *testing.B) {
			s := New(logr.Discard())
			res := build()
			if _, _, err := s.Publish(testGateway, res); err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if rebuild {
					res = build()
				}
				res.Endpoints[0] = endpoints("backend-00000", uint32(1000+i%50000))
				b.StartTimer()
				if _, changed, err := s.Publish(testGateway, res); err != nil || !changed {
					b.Fatal(changed, err)
				}
			}
		})
	}
}

// BenchmarkPublishAddsACluster10000 publishes one new cluster (with its endpoints and
// secrets) at a time beside 10,000: new names, so the consistency check runs and the
// versions of the changed types are patched.
func BenchmarkPublishAddsACluster10000(b *testing.B) {
	res, add := clustersBeside(b, 10000)
	s := New(logr.Discard())
	if _, _, err := s.Publish(testGateway, *res); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		add("new-" + strconv.Itoa(i))
		b.StartTimer()
		if _, changed, err := s.Publish(testGateway, *res); err != nil || !changed {
			b.Fatal(changed, err)
		}
	}
}

// clustersBeside is a Gateway's resources with n clusters (backend-<i>), each with its
// endpoints and a client certificate and CA secret, and add, which adds one more.
func clustersBeside(tb testing.TB, n int) (*envoyconfig.Resources, func(name string)) {
	cert := xdstest.SelfSignedCert(tb, "bench")
	res := &envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{httpListener(tb, "http", 10080, "http", "")},
		Routes:    []*routev3.RouteConfiguration{directRoute("http", "x")},
	}
	add := func(name string) {
		res.Clusters = append(res.Clusters, edsCluster(tb, name, name+"-cert", name+"-ca"))
		res.Endpoints = append(res.Endpoints, endpoints(name, 443))
		res.Secrets = append(res.Secrets, certSecret(name+"-cert", cert), caSecret(name+"-ca", cert))
	}
	for i := range n {
		add("backend-" + strconv.Itoa(i))
	}
	return res, add
}
