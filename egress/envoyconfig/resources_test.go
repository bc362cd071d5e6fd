package envoyconfig

import (
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestByTypeAgainHandsBackTheLastSliceOnlyForTheSameMessages: a type is the slice
// published last when it holds the very same messages in the same order, and a new
// slice otherwise (a message replaced, even by an equal one, the order changed, one
// more), so the xDS server never takes a change for none.
func TestByTypeAgainHandsBackTheLastSliceOnlyForTheSameMessages(t *testing.T) {
	a, b := &clusterv3.Cluster{Name: "a"}, &clusterv3.Cluster{Name: "b"}
	last := []types.Resource{a, b}
	tests := []struct {
		name     string
		clusters []*clusterv3.Cluster
		wantLast bool
	}{
		{name: "the same messages in the same order", clusters: []*clusterv3.Cluster{a, b}, wantLast: true},
		{name: "one replaced by an equal message", clusters: []*clusterv3.Cluster{a, {Name: "b"}}},
		{name: "the same messages in another order", clusters: []*clusterv3.Cluster{b, a}},
		{name: "one more", clusters: []*clusterv3.Cluster{a, b, {Name: "c"}}},
		{name: "none", clusters: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Resources{Clusters: tt.clusters}.ByTypeAgain(func(typeURL resource.Type) []types.Resource {
				if typeURL == resource.ClusterType {
					return last
				}
				return nil
			})
			clusters := got[resource.ClusterType]
			isLast := len(clusters) > 0 && &clusters[0] == &last[0]
			if isLast != tt.wantLast {
				t.Errorf("the last slice handed back: %v, want %v", isLast, tt.wantLast)
			}
			if len(clusters) != len(tt.clusters) {
				t.Fatalf("%d clusters, want %d", len(clusters), len(tt.clusters))
			}
			for i, c := range tt.clusters {
				if clusters[i] != types.Resource(c) {
					t.Errorf("cluster %d is not the message given", i)
				}
			}
			if len(got) != 5 {
				t.Errorf("%d types, want every one of the 5", len(got))
			}
		})
	}
}
