package xds

import (
	"slices"
	"strings"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/go-logr/logr/testr"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// Publish skips the full consistency check when every resource name is the same as in
// the last snapshot and every replaced resource references what its predecessor did.
// These cases keep every name and change only references: each must still be refused.
func TestPublishRefusesChangedReferencesUnderTheSameNames(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	tests := []struct {
		name    string
		edit    func(r *envoyconfig.Resources)
		wantErr string
	}{
		{
			name:    "a cluster trusts another CA secret",
			edit:    func(r *envoyconfig.Resources) { r.Clusters[1] = edsCluster(t, "mtls", "client-cert", "gateway-cert") },
			wantErr: `Secret "upstream-ca" is not referenced`,
		},
		{
			name: "a listener names the other route configuration",
			edit: func(r *envoyconfig.Resources) {
				r.Listeners[1] = httpListener(t, "https", 10443, "http", "gateway-cert")
			},
			wantErr: `RouteConfiguration "https" is not referenced`,
		},
		{
			name: "a cluster takes the other cluster's endpoints",
			edit: func(r *envoyconfig.Resources) {
				c := edsCluster(t, "plain", "", "")
				c.EdsClusterConfig.ServiceName = "mtls"
				r.Clusters[0] = c
			},
			wantErr: `ClusterLoadAssignment "plain" is not referenced`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(testr.New(t))
			res := fullResources(t, cert)
			if _, _, err := s.Publish(testGateway, res); err != nil {
				t.Fatal(err)
			}
			next := res // the same messages, but for the one replaced
			next.Clusters, next.Listeners = slices.Clone(res.Clusters), slices.Clone(res.Listeners)
			tt.edit(&next)
			if _, changed, err := s.Publish(testGateway, next); err == nil || !strings.Contains(err.Error(), tt.wantErr) || changed {
				t.Fatalf("publish = changed %v, %v; want an error containing %q", changed, err, tt.wantErr)
			}
		})
	}
}

// TestPublishAcceptsAChangeWithTheSameReferences replaces one cluster by one with other
// settings and the same references: published, no full check needed.
func TestPublishAcceptsAChangeWithTheSameReferences(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	s := New(testr.New(t))
	res := fullResources(t, cert)
	v1, _, err := s.Publish(testGateway, res)
	if err != nil {
		t.Fatal(err)
	}
	c := edsCluster(t, "mtls", "client-cert", "upstream-ca")
	c.ConnectTimeout = durationpb.New(7 * time.Second)
	res.Clusters = []*clusterv3.Cluster{res.Clusters[0], c}
	v2, changed, err := s.Publish(testGateway, res)
	if err != nil || !changed || v2 == v1 {
		t.Fatalf("publish = %s, %v, %v; want a new version %s != %s", v2, changed, err, v2, v1)
	}
}

// TestAnalyzeReusesFactsOfTheSameMessages proves the memo works: facts of a message
// published before are not learnt again; those of a new message are.
func TestAnalyzeReusesFactsOfTheSameMessages(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	res := fullResources(t, cert)
	first, err := analyze(res.ByType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Clusters = []*clusterv3.Cluster{res.Clusters[0], edsCluster(t, "mtls", "client-cert", "upstream-ca")}
	second, err := analyze(res.ByType(), first)
	if err != nil {
		t.Fatal(err)
	}
	for ti, st := range second.types {
		for i, f := range st.facts {
			reused := f == first.types[ti].facts[i]
			if want := st.items[i] == first.types[ti].items[i]; reused != want {
				t.Errorf("%s %s: facts reused %v, want %v", kind(st.typeURL), st.names[i], reused, want)
			}
		}
	}
}

// TestAnalyzeSharesTheTypesThatDidNotChange: a type handed over as the very messages
// of the last analysis, in the same order, is that analysis's own (the same arrays of
// names, items and facts, nothing allocated again); a type with one message replaced,
// or with the same messages in another order, is analyzed anew and still in name order.
func TestAnalyzeSharesTheTypesThatDidNotChange(t *testing.T) {
	cert := xdstest.SelfSignedCert(t, "gateway")
	res := fullResources(t, cert)
	res.Clusters = []*clusterv3.Cluster{res.Clusters[1], res.Clusters[0]}                   // mtls, plain: name order
	res.Endpoints = []*endpointv3.ClusterLoadAssignment{res.Endpoints[1], res.Endpoints[0]} // the same
	first, err := analyze(res.ByType(), nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Clusters = []*clusterv3.Cluster{edsCluster(t, "mtls", "client-cert", "upstream-ca"), res.Clusters[1]}
	if slices.IsSortedFunc(res.Secrets, func(a, b *tlsv3.Secret) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("the secrets must come out of name order for this test")
	}
	second, err := analyze(res.ByType(), first)
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]bool{resource.ClusterType: true, resource.SecretType: true}
	for ti, st := range second.types {
		was := &first.types[ti]
		shared := &st.names[0] == &was.names[0] && &st.items[0] == &was.items[0] && &st.facts[0] == &was.facts[0]
		if shared == changed[st.typeURL] {
			t.Errorf("%s: shares the last analysis's arrays: %v, want %v", kind(st.typeURL), shared, !changed[st.typeURL])
		}
		if !slices.IsSorted(st.names) {
			t.Errorf("%s: names out of order: %q", kind(st.typeURL), st.names)
		}
	}
	// A message replaced under its name keeps the type's names; a message more does not.
	clusters, was := second.ofType(resource.ClusterType), first.ofType(resource.ClusterType)
	if &clusters.names[0] != &was.names[0] || &clusters.items[0] == &was.items[0] {
		t.Error("the clusters, one replaced under its name, do not share the last names alone")
	}
	res.Clusters = append(res.Clusters, edsCluster(t, "zz", "", ""))
	third, err := analyze(res.ByType(), second)
	if err != nil {
		t.Fatal(err)
	}
	if more := third.ofType(resource.ClusterType); &more.names[0] == &clusters.names[0] || len(more.names) != 3 || more.names[2] != "zz" {
		t.Errorf("a cluster more: names %q, shared with the last: %v", more.names, &more.names[0] == &clusters.names[0])
	}
}
