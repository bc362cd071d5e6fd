package envoyconfig

import (
	"fmt"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// mcpIdleTimeout is how long an MCP stream may stay silent: servers push events on
// long-lived streamed responses, far longer than Envoy's 5 minute stream idle default.
const mcpIdleTimeout = time.Hour

// protocolOptions are the cluster's upstream HTTP options: the protocol spoken (always
// explicit, never guessed from ALPN), the idle timeout, and the upstream filters that
// apply the cluster's own header changes and credential to every request.
func (b *builder) protocolOptions(c *ir.Cluster) (*httpv3.HttpProtocolOptions, error) {
	explicit, err := explicitProtocol(c.Protocol)
	if err != nil {
		return nil, err
	}
	out := &httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: explicit},
	}
	if c.IdleTimeout > 0 {
		out.CommonHttpProtocolOptions = &corev3.HttpProtocolOptions{IdleTimeout: durationpb.New(c.IdleTimeout)}
	}
	if out.HttpFilters, err = b.upstreamFilters(c); err != nil {
		return nil, err
	}
	return out, nil
}

// explicitProtocol is HTTP/2 for HTTP2 and GRPC clusters (with prior knowledge in
// plaintext, after ALPN h2 over TLS) and HTTP/1.1 for the others.
func explicitProtocol(p ir.UpstreamProtocol) (*httpv3.HttpProtocolOptions_ExplicitHttpConfig, error) {
	switch p {
	case ir.ProtocolHTTP2, ir.ProtocolGRPC:
		return &httpv3.HttpProtocolOptions_ExplicitHttpConfig{ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
			Http2ProtocolOptions: &corev3.Http2ProtocolOptions{},
		}}, nil
	case ir.ProtocolHTTP1, ir.ProtocolWebSocket, ir.ProtocolMCP:
		return &httpv3.HttpProtocolOptions_ExplicitHttpConfig{ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_HttpProtocolOptions{
			HttpProtocolOptions: &corev3.Http1ProtocolOptions{},
		}}, nil
	default:
		return nil, fmt.Errorf("unknown upstream protocol %q", p)
	}
}

// isHTTP2 reports whether the cluster speaks HTTP/2, which decides the default ALPN.
func isHTTP2(p ir.UpstreamProtocol) bool { return p == ir.ProtocolHTTP2 || p == ir.ProtocolGRPC }

// applyProtocolNeeds sets what a route needs for the protocols of its clusters: the
// WebSocket upgrade (off unless a route allows it); for MCP no overall timeout, since
// a streamed response lasts as long as the session, only an idle timeout; for gRPC no
// fixed 15 s route timeout either (it would cut every long stream) but the deadline the
// client sends in grpc-timeout.
func applyProtocolNeeds(a *routev3.RouteAction, targets []*ir.Cluster) {
	if anyProtocol(targets, ir.ProtocolWebSocket) {
		a.UpgradeConfigs = []*routev3.RouteAction_UpgradeConfig{{UpgradeType: "websocket"}}
	}
	if anyProtocol(targets, ir.ProtocolMCP) {
		a.Timeout = durationpb.New(0)
		a.IdleTimeout = durationpb.New(mcpIdleTimeout)
	}
	if anyProtocol(targets, ir.ProtocolGRPC) {
		a.Timeout = durationpb.New(0)
		a.MaxStreamDuration = &routev3.RouteAction_MaxStreamDuration{GrpcTimeoutHeaderMax: durationpb.New(0)}
	}
}

func anyProtocol(clusters []*ir.Cluster, p ir.UpstreamProtocol) bool {
	for _, c := range clusters {
		if c.Protocol == p {
			return true
		}
	}
	return false
}
