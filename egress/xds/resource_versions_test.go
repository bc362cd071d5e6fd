package xds

import (
	"maps"
	"slices"
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
			gotMap, wantMap := a.versionMap()[typeURL], fresh.versionMap()[typeURL]
			if !maps.Equal(gotMap, wantMap) || got.held != want.held {
				t.Fatalf("%s: %s versions\n%v / %v\nwant\n%v / %v", step.name, kind(typeURL), gotMap, got.held, wantMap, want.held)
			}
			if got.keepsMap() != (got.byName != nil) {
				t.Fatalf("%s: %s: a map of versions kept: %v, salted or fetched: %v", step.name, kind(typeURL), got.byName != nil, got.keepsMap())
			}
		}
		prev = a
	}
	// The coupling is there to see: an endpoints version names its cluster's.
	wire, _ := prev.ofType(resource.EndpointType).versionOf("backend")
	versions := prev.versionMap()
	if v := versions[resource.EndpointType]["backend"]; v != wire+".2/"+versions[resource.ClusterType]["backend"] {
		t.Fatalf("endpoints version %q does not carry its salt and its cluster's version", v)
	}
}

// TestUnsaltedVersionsAreTheDigests: a type with neither a salt nor fetchers keeps no
// map of versions, and every version a snapshot answers for it, by name or in a walk,
// is the resource's digest, the version on the wire; a salted type's are its map's.
func TestUnsaltedVersionsAreTheDigests(t *testing.T) {
	res := twoClusters(t, 10080, time.Second)
	for _, salts := range []map[string]int{nil, {resource.ClusterType: 3}} {
		a := analyzed(t, res, nil)
		a.versionResources(nil, salts)
		snap, err := a.snapshot(map[string]string{})
		if err != nil {
			t.Fatal(err)
		}
		st, r := a.ofType(resource.ClusterType), a.resources[resource.ClusterType]
		if (r.byName == nil) != (salts == nil) {
			t.Fatalf("salts %v: a map of versions kept: %v", salts, r.byName != nil)
		}
		walked := 0
		snap.items(resource.ClusterType).each(func(name, version string) {
			walked++
			digest, _ := st.versionOf(name)
			if want := saltedVersion(digest, salts[resource.ClusterType]); version != want {
				t.Fatalf("salts %v: %s walked at version %q, want %q", salts, name, version, want)
			}
			at, _ := slices.BinarySearch(st.names, name)
			if m, v, ok := snap.items(resource.ClusterType).lookup(name); !ok || v != version || m != st.items[at] {
				t.Fatalf("salts %v: %s looked up: %v %q %v", salts, name, ok, v, m)
			}
			if snap.GetVersionMap(resource.ClusterType)[name] != version {
				t.Fatalf("salts %v: %s: the version map says %q, the walk %q", salts, name, snap.GetVersionMap(resource.ClusterType)[name], version)
			}
		})
		if walked != len(st.names) || walked == 0 {
			t.Fatalf("salts %v: walked %d clusters of %d", salts, walked, len(st.names))
		}
		if _, _, ok := snap.items(resource.ClusterType).lookup("no-such-cluster"); ok {
			t.Fatalf("salts %v: a cluster that is not there was found", salts)
		}
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
