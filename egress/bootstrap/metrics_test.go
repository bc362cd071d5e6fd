package bootstrap_test

import (
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// What the metrics listener answers is proved against a real Envoy in test/e2e
// (metrics_test.go); these tests pin its shape.

func staticListener(b *bootstrapv3.Bootstrap, name string) *listenerv3.Listener {
	for _, l := range b.GetStaticResources().GetListeners() {
		if l.GetName() == name {
			return l
		}
	}
	return nil
}

func staticCluster(b *bootstrapv3.Bootstrap, name string) *clusterv3.Cluster {
	for _, c := range b.GetStaticResources().GetClusters() {
		if c.GetName() == name {
			return c
		}
	}
	return nil
}

func TestMetricsListener(t *testing.T) {
	tests := []struct {
		name        string
		edit        func(*bootstrap.Options)
		wantAddress string // "": no metrics listener
	}{
		{"no metrics port, no metrics listener and no admin cluster", func(*bootstrap.Options) {}, ""},
		{"a pod binds every interface", func(o *bootstrap.Options) { o.MetricsPort, o.MetricsAddress = 19002, "0.0.0.0" }, "0.0.0.0"},
		{"without an address it binds loopback", func(o *bootstrap.Options) { o.MetricsPort = 19002 }, "127.0.0.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := baseOptions()
			opts.AdminAddress = "::1"
			tt.edit(&opts)
			b, err := bootstrap.Build(opts)
			if err != nil {
				t.Fatal(err)
			}
			l, admin := staticListener(b, "portcullis-metrics"), staticCluster(b, bootstrap.AdminClusterName)
			if tt.wantAddress == "" {
				if l != nil || admin != nil {
					t.Fatalf("listener %v, admin cluster %v; want neither", l, admin)
				}
				return
			}
			if sa := l.GetAddress().GetSocketAddress(); sa.GetAddress() != tt.wantAddress || sa.GetPortValue() != opts.MetricsPort {
				t.Errorf("metrics listener address = %v", sa)
			}
			checkMetricsRoutes(t, l)
			endpoint := admin.GetLoadAssignment().GetEndpoints()[0].GetLbEndpoints()[0].GetEndpoint().GetAddress().GetSocketAddress()
			if endpoint.GetAddress() != "::1" || endpoint.GetPortValue() != opts.AdminPort {
				t.Errorf("admin cluster endpoint = %v, want the admin interface [::1]:%d", endpoint, opts.AdminPort)
			}
		})
	}
}

// checkMetricsRoutes asserts the listener's inline route table has exactly one route:
// GET on the exact path /stats/prometheus, to the admin cluster.
func checkMetricsRoutes(t *testing.T, l *listenerv3.Listener) {
	t.Helper()
	var hcm hcmv3.HttpConnectionManager
	if err := l.GetFilterChains()[0].GetFilters()[0].GetTypedConfig().UnmarshalTo(&hcm); err != nil {
		t.Fatal(err)
	}
	vhosts := hcm.GetRouteConfig().GetVirtualHosts()
	if hcm.GetRds() != nil || len(vhosts) != 1 || len(vhosts[0].GetRoutes()) != 1 {
		t.Fatalf("route config = %v; want one inline virtual host with one route", hcm.GetRouteConfig())
	}
	r := vhosts[0].GetRoutes()[0]
	m := r.GetMatch()
	if m.GetPath() != bootstrap.MetricsPath || len(m.GetHeaders()) != 1 || m.GetHeaders()[0].GetName() != ":method" ||
		m.GetHeaders()[0].GetStringMatch().GetExact() != "GET" {
		t.Errorf("route match = %v; want GET on the exact path %s", m, bootstrap.MetricsPath)
	}
	if r.GetRoute().GetCluster() != bootstrap.AdminClusterName {
		t.Errorf("route action = %v", r.GetAction())
	}
}
