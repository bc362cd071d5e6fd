package main

import (
	"net"
	"net/netip"
	"strconv"

	"github.com/portcullis-io/portcullis/controllers/infra"
)

// hostHeldPorts are the loopback ports a Gateway listener must not take with the host
// provider, where Envoy binds listeners on this machine beside the manager: the
// manager's own xDS, metrics and health ports, and those of the processes `portcullis
// local` runs. A listener there would fail to bind; the translator refuses it with
// PortUnavailable naming the holder. In a cluster Envoy has its pod's ports to itself.
func hostHeldPorts(f *managerFlags) map[uint32]string {
	if f.provider != "host" {
		return nil
	}
	held := managerPorts(f)
	for port, what := range f.heldPorts {
		held[port] = what
	}
	return held
}

// managerPorts are the manager's own loopback ports with the host provider: xDS,
// metrics and health.
func managerPorts(f *managerFlags) map[uint32]string {
	ports := map[uint32]string{uint32(f.xdsPort): "the manager's xDS server"}
	for _, a := range []struct{ addr, what string }{
		{metricsOptions(f).BindAddress, "the manager's metrics endpoint (--metrics-bind-address)"},
		{f.probeAddr, "the manager's health probes (--health-probe-bind-address)"},
	} {
		if port := bindPort(a.addr); port != 0 {
			ports[port] = a.what
		}
	}
	return ports
}

// ownPorts are the ports of Portcullis' own components that no destination may be
// (translate.Options.OwnPorts): in a cluster each Envoy's admin interface in its pod; on
// a host the manager's ports, those of `portcullis local`'s control plane, and every
// running Envoy's admin and metrics ports, read from the provider at each translation.
func ownPorts(f *managerFlags, provider infra.Provider) func() map[uint32]string {
	host, ok := provider.(*infra.Host)
	if !ok {
		pod := map[uint32]string{infra.AdminPort: "the admin interface of the Envoy (in its pod)"}
		return func() map[uint32]string { return pod }
	}
	static := managerPorts(f)
	for port, what := range f.controlPlanePorts {
		static[port] = what
	}
	return func() map[uint32]string {
		out := host.OwnPorts()
		for port, what := range static {
			out[port] = what
		}
		return out
	}
}

// ownAddresses are this machine's addresses beyond loopback, where a component bound to
// every interface (--health-probe-bind-address :8081) is reached too; none in a
// cluster, where Envoy's pod has its own.
func ownAddresses(f *managerFlags) []netip.Addr {
	if f.provider != "host" {
		return nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && !p.Addr().IsLoopback() {
			out = append(out, p.Addr().WithZone(""))
		}
	}
	return out
}

// bindPort is the port of a bind address such as 127.0.0.1:8443 or :8081; 0 when the
// address is off ("0", "") or names no fixed port.
func bindPort(addr string) uint32 {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0
	}
	return uint32(n)
}
