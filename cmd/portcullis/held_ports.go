package main

import (
	"net"
	"strconv"
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
	held := map[uint32]string{uint32(f.xdsPort): "the manager's xDS server"}
	for _, a := range []struct{ addr, what string }{
		{metricsOptions(f).BindAddress, "the manager's metrics endpoint (--metrics-bind-address)"},
		{f.probeAddr, "the manager's health probes (--health-probe-bind-address)"},
	} {
		if port := bindPort(a.addr); port != 0 {
			held[port] = a.what
		}
	}
	for port, what := range f.heldPorts {
		held[port] = what
	}
	return held
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
