package xds

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestSnapshotIndexIsNewSnapshots: after every publish of a sequence (a cluster
// changed, one removed and one added, the same content in new messages, a resend, a
// route changed back), every type of the served snapshot holds exactly what
// go-control-plane's NewSnapshot would index from the published resources: the same
// names, the very messages published (or, for a type whose content did not change, the
// earlier messages of equal content; for route tables, wire forms that decode to them),
// and the snapshot's type versions.
func TestSnapshotIndexIsNewSnapshots(t *testing.T) {
	s := New(testr.New(t))
	cert := xdstest.SelfSignedCert(t, "gateway")
	res := fullResources(t, cert)
	steps := []struct {
		name   string
		change func(*envoyconfig.Resources)
	}{
		{"first", func(*envoyconfig.Resources) {}},
		{"a cluster changed", func(r *envoyconfig.Resources) {
			r.Clusters = []*clusterv3.Cluster{edsCluster(t, "plain", "client-cert", "upstream-ca"), r.Clusters[1]}
		}},
		{"a cluster removed, another added", func(r *envoyconfig.Resources) {
			r.Clusters = []*clusterv3.Cluster{r.Clusters[1], edsCluster(t, "third", "", "")}
			r.Endpoints = []*endpointv3.ClusterLoadAssignment{r.Endpoints[1], endpoints("third", 9090)}
		}},
		{"the same content in new messages", func(r *envoyconfig.Resources) {
			fresh := fullResources(t, cert)
			r.Listeners, r.Secrets = fresh.Listeners, fresh.Secrets
		}},
		{"a route changed", func(r *envoyconfig.Resources) {
			r.Routes = []*routev3.RouteConfiguration{directRoute("http", "new"), r.Routes[1]}
		}},
		{"after a resend, the route changed back", func(r *envoyconfig.Resources) {
			if _, err := s.Resend(testGateway); err != nil {
				t.Fatal(err)
			}
			r.Routes = []*routev3.RouteConfiguration{directRoute("http", "a"), r.Routes[1]}
		}},
	}
	for _, step := range steps {
		step.change(&res)
		if _, _, err := s.Publish(testGateway, res); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		served, err := s.cache.GetSnapshot(testGateway)
		if err != nil {
			t.Fatal(err)
		}
		want, err := cachev3.NewSnapshot("", res.ByType())
		if err != nil {
			t.Fatal(err)
		}
		for _, typeURL := range []string{resource.ListenerType, resource.RouteType, resource.ClusterType, resource.EndpointType, resource.SecretType} {
			got, exp := served.GetResources(typeURL), want.GetResources(typeURL)
			if len(got) != len(exp) {
				t.Fatalf("%s: %s: %d resources served, %d published", step.name, typeURL, len(got), len(exp))
			}
			withTTL := served.GetResourcesAndTTL(typeURL)
			if len(withTTL) != len(got) {
				t.Fatalf("%s: %s: %d resources with TTLs, %d without", step.name, typeURL, len(withTTL), len(got))
			}
			for name, r := range withTTL {
				if got[name] != r.Resource {
					t.Fatalf("%s: %s %s is another message with its TTL than without", step.name, typeURL, name)
				}
			}
			for name, m := range exp {
				g, ok := got[name]
				if !ok {
					t.Fatalf("%s: %s %s published, not served", step.name, typeURL, name)
				}
				if decoded, _ := onTheWire(t, g); g != m && !proto.Equal(decoded, m) {
					t.Fatalf("%s: %s %s served is neither the published message nor decodes to one equal to it", step.name, typeURL, name)
				}
			}
			if v := served.GetVersion(typeURL); v == "" || v != s.Status(testGateway).TypeVersions[typeURL] {
				t.Fatalf("%s: %s served at version %q, status says %q", step.name, typeURL, v, s.Status(testGateway).TypeVersions[typeURL])
			}
		}
	}
}
