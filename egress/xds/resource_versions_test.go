package xds

import (
	"maps"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// The versions of a changed snapshot are patched from the previous snapshot's; each
// step here checks them against versions computed from nothing.
func TestResourceVersionsPatchedEqualComputedAfresh(t *testing.T) {
	res := twoClusters(t, 10080, time.Second)
	setTimeout := func(i int, d time.Duration) {
		c := proto.Clone(res.Clusters[i]).(*clusterv3.Cluster)
		c.ConnectTimeout = durationpb.New(d)
		res.Clusters = append([]*clusterv3.Cluster(nil), res.Clusters...)
		res.Clusters[i] = c
	}
	steps := []struct {
		name  string
		edit  func()
		salts map[string]int
	}{
		{"nothing changes", func() {}, nil},
		{"a cluster changes", func() { setTimeout(1, 3*time.Second) }, nil},
		{"an endpoints resource changes", func() {
			res.Endpoints = []*endpointv3.ClusterLoadAssignment{res.Endpoints[0], endpoints("spare", 12)}
		}, nil},
		{"a cluster and its endpoints are added", func() {
			res.Clusters = append(res.Clusters, edsCluster(t, "third", "", ""))
			res.Endpoints = append(res.Endpoints, endpoints("third", 13))
		}, nil},
		{"a cluster without endpoints is added", func() { res.Clusters = append(res.Clusters, staticCluster("static", 14)) }, nil},
		{"clusters get a salt", func() {}, map[string]int{resource.ClusterType: 1}},
		{"the salted cluster changes", func() { setTimeout(0, 4*time.Second) }, map[string]int{resource.ClusterType: 1}},
		{"endpoints get a salt", func() {}, map[string]int{resource.ClusterType: 1, resource.EndpointType: 2}},
		{"a cluster and its endpoints are removed", func() {
			res.Clusters = res.Clusters[:1]
			res.Endpoints = res.Endpoints[:1]
		}, map[string]int{resource.ClusterType: 1, resource.EndpointType: 2}},
	}
	var prev *analysis
	for _, step := range steps {
		step.edit()
		a := analyzed(t, res, prev)
		a.versionResources(prev, step.salts)
		fresh := analyzed(t, res, nil)
		fresh.versionResources(nil, step.salts)
		for typeURL, want := range fresh.resources {
			got := a.resources[typeURL]
			if !maps.Equal(got.byName, want.byName) || got.held != want.held {
				t.Fatalf("%s: %s versions\n%v / %v\nwant\n%v / %v", step.name, kind(typeURL), got.byName, got.held, want.byName, want.held)
			}
		}
		prev = a
	}
	// The coupling is there to see: an endpoints version names its cluster's.
	wire, _ := prev.ofType(resource.EndpointType).versionOf("backend")
	if v := prev.resources[resource.EndpointType].byName["backend"]; v != wire+".2/"+prev.resources[resource.ClusterType].byName["backend"] {
		t.Fatalf("endpoints version %q does not carry its salt and its cluster's version", v)
	}
}

func analyzed(t *testing.T, res envoyconfig.Resources, prev *analysis) *analysis {
	t.Helper()
	a, err := analyze(res.ByType(), prev)
	if err != nil {
		t.Fatal(err)
	}
	_, a.digests = a.versions(nil)
	return a
}
