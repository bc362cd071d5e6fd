package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// admin binds the admin interface to one address only. It is exempt from the global
// connection limit so that probes and debugging keep working under overload.
func admin(opts Options) *bootstrapv3.Admin {
	return &bootstrapv3.Admin{
		Address:               socketAddress(opts.AdminAddress, opts.AdminPort),
		IgnoreGlobalConnLimit: true,
	}
}

func socketAddress(host string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Address:       host,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}
