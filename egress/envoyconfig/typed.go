package envoyconfig

import (
	"fmt"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
)

// Names of the Envoy extensions this package configures.
const (
	tlsTransportSocket = "envoy.transport_sockets.tls"
	httpConnManager    = "envoy.filters.network.http_connection_manager"
	routerFilter       = "envoy.filters.http.router"
	httpProtocolOpts   = "envoy.extensions.upstreams.http.v3.HttpProtocolOptions"
)

// pack validates m and wraps it in an Any. protoc-gen-validate does not descend into
// Any fields, so an extension config is checked here or not at all. Marshalling is
// deterministic so that equal IR gives byte-identical resources.
func pack(m proto.Message) (*anypb.Any, error) {
	if v, ok := m.(validatable); ok {
		if err := v.ValidateAll(); err != nil {
			return nil, fmt.Errorf("invalid %s: %w", m.ProtoReflect().Descriptor().FullName(), err)
		}
	}
	value, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &anypb.Any{
		TypeUrl: "type.googleapis.com/" + string(m.ProtoReflect().Descriptor().FullName()),
		Value:   value,
	}, nil
}

// tlsSocket wraps a Downstream- or UpstreamTlsContext in the TLS transport socket.
func tlsSocket(ctx proto.Message) (*corev3.TransportSocket, error) {
	cfg, err := pack(ctx)
	if err != nil {
		return nil, err
	}
	return &corev3.TransportSocket{
		Name:       tlsTransportSocket,
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: cfg},
	}, nil
}

// socketAddress is a TCP address; Envoy takes IPs only here, never names to resolve.
func socketAddress(ip string, port uint32) *corev3.Address {
	return &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
		Protocol:      corev3.SocketAddress_TCP,
		Address:       ip,
		PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
	}}}
}

// checkPort rejects 0 and values above 65535, which PGV would let through (0) or which
// are not ports at all.
func checkPort(port uint32) error {
	if port == 0 || port > 65535 {
		return fmt.Errorf("port %d is out of range 1-65535", port)
	}
	return nil
}
