package envoyconfig

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// change is one step of a sequence of IRs given to the same Gateway's builds.
type change struct {
	name string
	edit func(gw *ir.Gateway)
}

// changeSequence edits validGateway step by step, each step on top of the previous
// one: every kind of resource changes, references appear and break, and some steps
// return to earlier content.
func changeSequence() []change {
	cluster := func(gw *ir.Gateway) *ir.Cluster { return gw.Clusters[0] }
	route := func(gw *ir.Gateway) *ir.Route { return &gw.Listeners[0].VirtualHosts[0].Routes[0] }
	secret := func(gw *ir.Gateway, name string) *ir.Secret {
		for i := range gw.Secrets {
			if gw.Secrets[i].Name == name {
				return &gw.Secrets[i]
			}
		}
		panic(name)
	}
	var removed ir.Secret
	return []change{
		{"unchanged", func(*ir.Gateway) {}},
		{"endpoint moves", func(gw *ir.Gateway) { cluster(gw).Endpoints[0].Address = "192.0.2.2" }},
		{"endpoint added", func(gw *ir.Gateway) {
			cluster(gw).Endpoints = append(cluster(gw).Endpoints, ir.Endpoint{Address: "2001:db8::1", Port: 443})
		}},
		{"SNI changes", func(gw *ir.Gateway) { cluster(gw).TLS.SNI = "api2.example.com" }},
		{"CA bundle rotates", func(gw *ir.Gateway) { secret(gw, "ca/api").Certificate = []byte("ca-bundle-2") }},
		{"credential rotates", func(gw *ir.Gateway) { secret(gw, "generic/token").Value = []byte("Bearer next") }},
		{"listener certificate rotates", func(gw *ir.Gateway) { secret(gw, "tls/listener").PrivateKey = []byte("key-2") }},
		{"cluster protocol becomes gRPC", func(gw *ir.Gateway) { cluster(gw).Protocol = ir.ProtocolGRPC }},
		{"route path changes", func(gw *ir.Gateway) { route(gw).Match.Path = "/v2" }},
		{"second cluster and weighted route", func(gw *ir.Gateway) {
			gw.Clusters = append(gw.Clusters, &ir.Cluster{Name: "backend/default/web/80", Protocol: ir.ProtocolHTTP1,
				Endpoints: []ir.Endpoint{{Address: "192.0.2.9", Port: 80}}})
			route(gw).Backends = append(route(gw).Backends, ir.WeightedCluster{Cluster: "backend/default/web/80", Weight: 3})
		}},
		{"second cluster becomes WebSocket", func(gw *ir.Gateway) { gw.Clusters[1].Protocol = ir.ProtocolWebSocket }},
		{"CA secret becomes a certificate (error)", func(gw *ir.Gateway) {
			secret(gw, "ca/api").Kind = ir.SecretTLSCertificate
			secret(gw, "ca/api").PrivateKey = []byte("k")
		}},
		{"CA secret restored", func(gw *ir.Gateway) {
			secret(gw, "ca/api").Kind = ir.SecretCACertificate
			secret(gw, "ca/api").PrivateKey = nil
		}},
		{"second cluster removed, the route still names it (error)", func(gw *ir.Gateway) { gw.Clusters = gw.Clusters[:1] }},
		{"route fixed", func(gw *ir.Gateway) { route(gw).Backends = route(gw).Backends[:1] }},
		{"listener loses TLS", func(gw *ir.Gateway) { gw.Listeners[0].TLS = nil }},
		{"listener gets TLS back", func(gw *ir.Gateway) {
			gw.Listeners[0].TLS = &ir.ListenerTLS{CertificateSecrets: []string{"tls/listener"}}
		}},
		{"listener port moves", func(gw *ir.Gateway) { gw.Listeners[0].Port = 10444 }},
		{"CA secret removed, its cluster unchanged (error)", func(gw *ir.Gateway) {
			removed = *secret(gw, "ca/api")
			gw.Secrets = slices.DeleteFunc(gw.Secrets, func(s ir.Secret) bool { return s.Name == "ca/api" })
		}},
		{"CA secret back", func(gw *ir.Gateway) { gw.Secrets = append(gw.Secrets, removed) }},
		{"credential secret removed (error)", func(gw *ir.Gateway) { gw.Secrets = gw.Secrets[:1] }},
	}
}

// TestCachedBuildEqualsUncachedBuild gives one Cache a sequence of changing IRs for the
// same Gateway and, after every step, compares its build with a build that starts cold:
// the same error, or resources that marshal to the same bytes.
func TestCachedBuildEqualsUncachedBuild(t *testing.T) {
	cache := NewCache()
	gw := validGateway()
	for _, step := range changeSequence() {
		gw = copied(gw)
		step.edit(&gw)
		err := compareWithCold(t, step.name, cache, gw)
		if fails := strings.HasSuffix(step.name, "(error)"); fails != (err != nil) {
			t.Fatalf("%s: build error %v; want an error: %v", step.name, err, fails)
		}
	}
	// Every golden IR, one after the other under one Gateway name: unrelated content
	// behind the same resource names.
	for _, tc := range goldenCases(t) {
		tc.gw.Name = gw.Name
		if err := compareWithCold(t, "golden "+tc.name, cache, tc.gw); err != nil {
			t.Fatalf("golden %s: %v", tc.name, err)
		}
	}
}

// copied is a deep copy of gw: a step edits new memory, never the IR an earlier build
// was made from, which the Cache keeps (as the translator gives a changed value).
func copied(gw ir.Gateway) ir.Gateway {
	var out ir.Gateway
	deepCopy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(gw))
	return out
}

// compareWithCold fails unless the cached build equals a cold one; it returns the
// build's error.
func compareWithCold(t *testing.T, step string, cache *Cache, gw ir.Gateway) error {
	t.Helper()
	got, gotErr := cache.Build(gw, testOptions)
	want, wantErr := NewCache().Build(gw, testOptions)
	switch {
	case (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error():
		t.Fatalf("%s: cached build error %v, cold build error %v", step, gotErr, wantErr)
	case gotErr == nil && !bytes.Equal(marshalAll(t, got), marshalAll(t, want)):
		t.Fatalf("%s: the cached build differs from a cold build", step)
	}
	return gotErr
}

// TestCachedBuildReusesUnchangedMessages proves the cache does its job: after one
// endpoint changes, every other message is the very message of the last build.
func TestCachedBuildReusesUnchangedMessages(t *testing.T) {
	cache := NewCache()
	gw := validGateway()
	first, err := cache.Build(gw, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	gw.Clusters[0].Endpoints = []ir.Endpoint{{Address: "192.0.2.7", Port: 443}}
	second, err := cache.Build(gw, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	before, after := allMessages(first), allMessages(second)
	changed := 0
	for i := range after {
		if before[i] != after[i] {
			changed++
			if _, ok := after[i].(interface{ GetClusterName() string }); !ok {
				t.Errorf("%T was rebuilt though its IR did not change", after[i])
			}
		}
	}
	if changed != 1 {
		t.Errorf("%d messages rebuilt, want 1 (the load assignment)", changed)
	}
}

// TestCacheDropsGatewaysNoLongerBuilt builds many Gateways once and one Gateway many
// times: the memos of the others are dropped.
func TestCacheDropsGatewaysNoLongerBuilt(t *testing.T) {
	cache := NewCache()
	for _, name := range []string{"a/1", "a/2", "a/3"} {
		gw := validGateway()
		gw.Name = name
		if _, err := cache.Build(gw, testOptions); err != nil {
			t.Fatal(err)
		}
	}
	gw := validGateway()
	for range 4 * idleBuilds * 4 {
		if _, err := cache.Build(gw, testOptions); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(cache.gateways); n != 1 {
		t.Errorf("the cache remembers %d Gateways, want only the one still built", n)
	}
	cache.Forget(gw.Name)
	if n := len(cache.gateways); n != 0 {
		t.Errorf("the cache remembers %d Gateways after Forget", n)
	}
}

// TestCacheOptionsChangeRebuilds changes the system CA file: nothing may be reused.
func TestCacheOptionsChangeRebuilds(t *testing.T) {
	cache := NewCache()
	gw := validGateway()
	gw.Clusters[0].TLS = &ir.UpstreamTLS{SNI: "api.example.com", SystemCA: true}
	if _, err := cache.Build(gw, Options{SystemCAFile: "/a.pem"}); err != nil {
		t.Fatal(err)
	}
	got, err := cache.Build(gw, Options{SystemCAFile: "/b.pem"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewCache().Build(gw, Options{SystemCAFile: "/b.pem"})
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(got.Clusters[0], want.Clusters[0]) {
		t.Fatal("the cluster still names the old CA file")
	}
}
