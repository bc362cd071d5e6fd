package envoyconfig

import (
	"strings"
	"testing"
)

// TestListenAddress: Gateway listeners bind every interface unless Options name an
// address (the host provider binds loopback); an address that is not an IP is refused,
// never replaced by a default.
func TestListenAddress(t *testing.T) {
	tests := []struct {
		name, address, want, wantErr string
	}{
		{name: "the default binds every interface", address: "", want: "0.0.0.0"},
		{name: "loopback for an Envoy on a developer's machine", address: "127.0.0.1", want: "127.0.0.1"},
		{name: "an IPv6 address", address: "::1", want: "::1"},
		{name: "a host name is refused", address: "localhost", wantErr: `listen address "localhost" is not an IP address`},
		{name: "an address with a port is refused", address: "127.0.0.1:80", wantErr: `listen address "127.0.0.1:80" is not an IP address`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := NewCache().Build(validGateway(), Options{ListenAddress: tt.address})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Build: %v, want an error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, l := range res.Listeners {
				if got := l.GetAddress().GetSocketAddress().GetAddress(); got != tt.want {
					t.Errorf("listener %s binds %q, want %q", l.GetName(), got, tt.want)
				}
			}
			if len(res.Listeners) == 0 {
				t.Fatal("no listener built")
			}
		})
	}
}

// TestCacheRebuildsWhenTheListenAddressChanges: messages built for one address are not
// reused for another.
func TestCacheRebuildsWhenTheListenAddressChanges(t *testing.T) {
	c := NewCache()
	if _, err := c.Build(validGateway(), Options{}); err != nil {
		t.Fatal(err)
	}
	res, err := c.Build(validGateway(), Options{ListenAddress: "127.0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Listeners[0].GetAddress().GetSocketAddress().GetAddress(); got != "127.0.0.1" {
		t.Fatalf("listener binds %q after the address changed, want 127.0.0.1", got)
	}
}
