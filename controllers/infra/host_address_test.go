package infra

import "testing"

// TestHostStatusAddress: the Gateway's status address is where a client on this
// machine reaches the listeners: the listen address, or loopback of its family when
// Envoy binds every interface.
func TestHostStatusAddress(t *testing.T) {
	tests := []struct{ name, listen, want string }{
		{name: "no address given", listen: "", want: "127.0.0.1"},
		{name: "loopback", listen: "127.0.0.1", want: "127.0.0.1"},
		{name: "every IPv4 interface", listen: "0.0.0.0", want: "127.0.0.1"},
		{name: "every IPv6 interface", listen: "::", want: "::1"},
		{name: "one interface", listen: "192.0.2.10", want: "192.0.2.10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Host{opts: HostOptions{ListenAddress: tt.listen}}
			if got := h.statusAddress(); got != tt.want {
				t.Fatalf("status address %q, want %q", got, tt.want)
			}
		})
	}
}
