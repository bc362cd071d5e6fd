package xds

import (
	"strconv"
	"testing"

	"github.com/go-logr/logr"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// BenchmarkPublishRouteTable10000 publishes a Gateway whose one listener routes 10,000
// hosts to 10,000 TLS clusters, as envoyconfig builds them, one host added per
// iteration: the route table is new each time and everything else is reused, what a
// created HTTPRoute publishes when every route is in one table.
func BenchmarkPublishRouteTable10000(b *testing.B) {
	const n = 10000
	gw := ir.Gateway{Name: testGateway, Listeners: []ir.Listener{{Name: "http-10080", Port: 10080}}}
	add := func(i int) {
		host := "api-" + strconv.Itoa(i) + ".example.com"
		cluster := "backend/team/b" + strconv.Itoa(i) + "/https"
		gw.Clusters = append(gw.Clusters, &ir.Cluster{
			Name: cluster, Origin: ir.ClusterOrigin{Kind: ir.OriginBackend, Namespace: "team", Name: "b" + strconv.Itoa(i), Port: 443},
			Endpoints: []ir.Endpoint{{Address: "192.0.2.1", Port: 443}}, Protocol: ir.ProtocolHTTP1,
			TLS: &ir.UpstreamTLS{SNI: host, SystemCA: true},
		})
		l := &gw.Listeners[0]
		l.VirtualHosts = append(l.VirtualHosts, ir.VirtualHost{
			Name: "10080/" + host, Domains: []string{host},
			Routes: []ir.Route{{Name: "httproute/team/r" + strconv.Itoa(i) + "/rule/0/match/0", Match: ir.RouteMatch{PathType: ir.PathPrefix, Path: "/"},
				Backends: []ir.WeightedCluster{{Cluster: cluster, Weight: 1}}}},
		})
	}
	for i := range n {
		add(i)
	}
	cache := envoyconfig.NewCache()
	build := func() envoyconfig.Resources {
		res, err := cache.Build(gw, envoyconfig.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	s := New(logr.Discard())
	if _, _, err := s.Publish(testGateway, build()); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		add(n + i)
		res := build()
		b.StartTimer()
		if _, changed, err := s.Publish(testGateway, res); err != nil || !changed {
			b.Fatal(changed, err)
		}
	}
}
