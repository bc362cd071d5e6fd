package controllers

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

func clustersNamed(names ...string) []*ir.Cluster {
	out := make([]*ir.Cluster, len(names))
	for i, name := range names {
		out[i] = &ir.Cluster{Name: name}
	}
	return out
}

func TestClustersOnlyInLast(t *testing.T) {
	tests := []struct {
		name          string
		last, desired []string
		want          []string
	}{
		{"nothing dropped", []string{"a", "b"}, []string{"a", "b", "c"}, nil},
		{"one dropped in the middle", []string{"a", "b", "c"}, []string{"a", "c"}, []string{"b"}},
		{"dropped at both ends, added between", []string{"a", "m", "z"}, []string{"b", "m", "y"}, []string{"a", "z"}},
		{"desired empty", []string{"a", "b"}, nil, []string{"a", "b"}},
		{"last not in order (compared through a set)", []string{"c", "a", "b"}, []string{"b"}, []string{"c", "a"}},
		{"desired holds a name twice (compared through a set)", []string{"a", "b"}, []string{"b", "b"}, []string{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clusterNames(clustersOnlyIn(clustersNamed(tt.last...), clustersNamed(tt.desired...)))
			if !slices.Equal(got, tt.want) && len(got)+len(tt.want) > 0 {
				t.Errorf("clustersOnlyIn = %v, want %v", got, tt.want)
			}
		})
	}
}

// withClustersBySet is withClusters as it was written first, with a set of the desired
// names and every list cloned and sorted: the reference the walk must agree with.
func withClustersBySet(listeners []ir.Listener, desired, last ir.Gateway, keep map[string]bool) ir.Gateway {
	out := desired
	out.Listeners = listeners
	out.Clusters, out.Secrets = slices.Clip(desired.Clusters), slices.Clip(desired.Secrets)
	have := map[string]bool{}
	for _, c := range desired.Clusters {
		have[c.Name] = true
	}
	for _, c := range last.Clusters {
		if have[c.Name] || (keep != nil && !keep[c.Name]) {
			continue
		}
		out.Clusters = append(out.Clusters, c)
		out.Secrets = appendSecrets(out.Secrets, last.Secrets, clusterSecrets(c))
	}
	for _, l := range listeners {
		if l.TLS != nil {
			out.Secrets = appendSecrets(out.Secrets, last.Secrets, l.TLS.CertificateSecrets)
		}
	}
	out.Clusters = slices.Clone(out.Clusters)
	out.Secrets = slices.Clone(out.Secrets)
	slices.SortFunc(out.Clusters, func(a, b *ir.Cluster) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.Secrets, func(a, b ir.Secret) int { return strings.Compare(a.Name, b.Name) })
	out.Secrets = usedSecrets(out)
	return out
}

// randomStagedGateway is a Gateway of up to 12 of 16 clusters, in name order (as
// translation gives them) or not, some with a CA secret, a listener with a certificate.
func randomStagedGateway(r *rand.Rand, sorted bool) ir.Gateway {
	var gw ir.Gateway
	for i := range 16 {
		if r.IntN(4) == 0 {
			continue
		}
		c := ir.Cluster{Name: fmt.Sprintf("c%02d", i)}
		if r.IntN(2) == 0 {
			c.TLS = &ir.UpstreamTLS{CASecret: fmt.Sprintf("ca%02d", i)}
			gw.Secrets = append(gw.Secrets, ir.Secret{Name: c.TLS.CASecret, Kind: ir.SecretCACertificate})
		}
		gw.Clusters = append(gw.Clusters, &c)
	}
	cert := fmt.Sprintf("cert%d", r.IntN(2))
	gw.Listeners = []ir.Listener{{Name: "https", TLS: &ir.ListenerTLS{CertificateSecrets: []string{cert}}}}
	gw.Secrets = append(gw.Secrets, ir.Secret{Name: cert, Kind: ir.SecretTLSCertificate})
	slices.SortFunc(gw.Secrets, func(a, b ir.Secret) int { return strings.Compare(a.Name, b.Name) })
	if !sorted {
		r.Shuffle(len(gw.Clusters), func(i, j int) { gw.Clusters[i], gw.Clusters[j] = gw.Clusters[j], gw.Clusters[i] })
	}
	return gw
}

// TestWithClustersAgreesWithTheSetVersion stages random pairs of Gateways (the last
// published and the desired, in order or not, with and without a set of clusters to
// keep, with either Gateway's listeners) and compares withClusters with the reference.
func TestWithClustersAgreesWithTheSetVersion(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 1897))
	for i := range 500 {
		last, desired := randomStagedGateway(r, r.IntN(5) > 0), randomStagedGateway(r, r.IntN(5) > 0)
		var keep map[string]bool
		if r.IntN(2) == 0 {
			keep = map[string]bool{}
			for _, c := range last.Clusters {
				keep[c.Name] = r.IntN(2) == 0
			}
		}
		listeners := desired.Listeners
		if r.IntN(2) == 0 {
			listeners = last.Listeners
		}
		want := withClustersBySet(listeners, desired, last, keep)
		got := withClusters(listeners, desired, last, keep)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: withClusters = %+v\nwant %+v", i, got, want)
		}
	}
}

// existingRouteGetsNewClusterBySet is existingRouteGetsNewCluster as it was written
// first, with a set of last's clusters and of its routes: the reference.
func existingRouteGetsNewClusterBySet(last, desired ir.Gateway) bool {
	have := map[string]bool{}
	for _, c := range last.Clusters {
		have[c.Name] = true
	}
	existing := map[string]bool{}
	forEachRoute(last, func(rt ir.Route) { existing[rt.Name] = existing[rt.Name] || len(rt.Backends) > 0 })
	found := false
	forEachRoute(desired, func(rt ir.Route) {
		if !existing[rt.Name] {
			return
		}
		for _, b := range rt.Backends {
			found = found || !have[b.Cluster]
		}
	})
	return found
}

// withRandomRoutes gives gw's listener virtual hosts and a tenant table whose routes
// (up to 12 of 20 names) send to up to two of the 16 cluster names or answer
// themselves.
func withRandomRoutes(r *rand.Rand, gw ir.Gateway) ir.Gateway {
	table := func() []ir.VirtualHost {
		var vhs []ir.VirtualHost
		for h := range r.IntN(4) {
			vh := ir.VirtualHost{Name: fmt.Sprintf("h%d", h), Domains: []string{fmt.Sprintf("h%d.test", h)}}
			for range r.IntN(4) {
				rt := ir.Route{Name: fmt.Sprintf("r%02d", r.IntN(20))}
				for range r.IntN(3) {
					rt.Backends = append(rt.Backends, ir.WeightedCluster{Cluster: fmt.Sprintf("c%02d", r.IntN(16)), Weight: 1})
				}
				vh.Routes = append(vh.Routes, rt)
			}
			vhs = append(vhs, vh)
		}
		return vhs
	}
	l := gw.Listeners[0]
	l.VirtualHosts = table()
	l.Tenants = []ir.Tenant{{Namespace: "t", VirtualHosts: table()}}
	gw.Listeners = []ir.Listener{l}
	return gw
}

func TestExistingRouteGetsNewClusterAgreesWithTheSetVersion(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1897))
	seen := map[bool]int{}
	for i := range 2000 {
		last := withRandomRoutes(r, randomStagedGateway(r, r.IntN(5) > 0))
		desired := withRandomRoutes(r, randomStagedGateway(r, r.IntN(5) > 0))
		want := existingRouteGetsNewClusterBySet(last, desired)
		if got := existingRouteGetsNewCluster(last, desired); got != want {
			t.Fatalf("case %d: existingRouteGetsNewCluster = %v, want %v\nlast %+v\ndesired %+v", i, got, want, last, desired)
		}
		seen[want]++
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("the cases gave only one answer: %v", seen)
	}
}

func TestRoutedAmongIsRoutedClustersNarrowed(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 1897))
	for i := range 500 {
		gw := withRandomRoutes(r, randomStagedGateway(r, true))
		among := randomStagedGateway(r, r.IntN(2) == 0).Clusters
		all := routedClusters(gw)
		want := map[string]bool{}
		for _, c := range among {
			if all[c.Name] {
				want[c.Name] = true
			}
		}
		if got := routedAmong(gw, among); got == nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: routedAmong = %v, want %v", i, got, want)
		}
	}
}
