package envoyconfig

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestListenerIgnoresTenantVirtualHosts is the proof equalListenerHead relies on: of a
// tenant, a listener resource reads the namespace and the stream routes, never the
// virtual hosts. Every golden IR with tenants is built as it is, with its tenants'
// virtual hosts removed and with them moved to another tenant; the listeners must come
// out the same, while the route configurations (the check that the change was seen) do
// not.
func TestListenerIgnoresTenantVirtualHosts(t *testing.T) {
	tried := 0
	for _, tc := range goldenCases(t) {
		if !hasTenantTables(tc.gw) {
			continue
		}
		tried++
		t.Run(tc.name, func(t *testing.T) {
			want, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			for variant, gw := range map[string]ir.Gateway{
				"without the tenants' virtual hosts": withTenantHosts(tc.gw, func([]ir.Tenant, int) []ir.VirtualHost { return nil }),
				"with each tenant's moved to the next": withTenantHosts(tc.gw, func(tenants []ir.Tenant, j int) []ir.VirtualHost {
					return tenants[(j+1)%len(tenants)].VirtualHosts
				}),
			} {
				got, err := Build(gw, testOptions)
				if err != nil {
					t.Fatalf("%s: %v", variant, err)
				}
				if len(got.Listeners) != len(want.Listeners) {
					t.Fatalf("%s: %d listeners, want %d", variant, len(got.Listeners), len(want.Listeners))
				}
				for i := range want.Listeners {
					if !proto.Equal(got.Listeners[i], want.Listeners[i]) {
						t.Errorf("%s: listener %q differs", variant, want.Listeners[i].GetName())
					}
				}
				if sameRoutes(got, want) {
					t.Errorf("%s: the route configurations did not change either: the variant changed nothing", variant)
				}
			}
		})
	}
	if tried == 0 {
		t.Fatal("no golden IR has tenant route tables")
	}
}

func hasTenantTables(gw ir.Gateway) bool {
	for _, l := range gw.Listeners {
		for _, tn := range l.Tenants {
			if len(tn.VirtualHosts) > 0 {
				return true
			}
		}
	}
	return false
}

// withTenantHosts is gw with the virtual hosts of each listener's tenant j replaced by
// hosts(the listener's tenants, j); the IR's slices are copied, not changed.
func withTenantHosts(gw ir.Gateway, hosts func([]ir.Tenant, int) []ir.VirtualHost) ir.Gateway {
	gw.Listeners = append([]ir.Listener(nil), gw.Listeners...)
	for i := range gw.Listeners {
		l := &gw.Listeners[i]
		tenants := append([]ir.Tenant(nil), l.Tenants...)
		for j := range tenants {
			tenants[j].VirtualHosts = hosts(l.Tenants, j)
		}
		l.Tenants = tenants
	}
	return gw
}

func sameRoutes(a, b Resources) bool {
	if len(a.Routes) != len(b.Routes) {
		return false
	}
	for i := range a.Routes {
		if !proto.Equal(a.Routes[i], b.Routes[i]) {
			return false
		}
	}
	return true
}

// TestRouteChangeReusesTheIsolatingListener: on a tenant-isolating Gateway, a change to
// one tenant's routes rebuilds that tenant's route configuration and keeps the listener
// message of the last build.
func TestRouteChangeReusesTheIsolatingListener(t *testing.T) {
	var gw ir.Gateway
	for _, tc := range goldenCases(t) {
		if tc.name == "tenant-isolation" {
			gw = tc.gw
		}
	}
	if !hasTenantTables(gw) {
		t.Fatal("the tenant-isolation golden IR has no tenant route tables")
	}
	c := NewCache()
	first, err := c.Build(gw, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	changed := withTenantHosts(gw, func(tenants []ir.Tenant, j int) []ir.VirtualHost {
		if j > 0 {
			return tenants[j].VirtualHosts
		}
		hosts := append([]ir.VirtualHost(nil), tenants[j].VirtualHosts...)
		hosts[0].Domains = append(append([]string(nil), hosts[0].Domains...), "added.example.com")
		return hosts
	})
	second, err := c.Build(changed, testOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i := range first.Listeners {
		if first.Listeners[i] != second.Listeners[i] {
			t.Errorf("listener %q was built again", first.Listeners[i].GetName())
		}
	}
	if sameRoutes(first, second) {
		t.Error("no route configuration changed: the change was not seen")
	}
}
