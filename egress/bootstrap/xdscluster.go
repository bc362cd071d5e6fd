package bootstrap

import (
	"net/netip"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Connection settings of the xDS cluster. The ADS stream lives as long as Envoy, so a
// dead peer must be noticed both by HTTP/2 PINGs (the xDS server permits one every 10 s
// or more) and by TCP keepalive.
const (
	xdsConnectTimeout      = 5 * time.Second
	xdsH2KeepaliveInterval = 30 * time.Second
	xdsH2KeepaliveTimeout  = 10 * time.Second
	xdsTCPKeepaliveTime    = 30 // seconds idle before the first probe
	xdsTCPKeepaliveIntvl   = 10 // seconds between probes
	xdsTCPKeepaliveProbes  = 3
)

// xdsCluster is the static cluster to the xDS server: STATIC for an IP address,
// STRICT_DNS for a name; always HTTP/2 (gRPC).
func xdsCluster(opts Options) (*clusterv3.Cluster, error) {
	protocol, err := anypb.New(&httpv3.HttpProtocolOptions{
		UpstreamProtocolOptions: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_{ExplicitHttpConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig{
			ProtocolConfig: &httpv3.HttpProtocolOptions_ExplicitHttpConfig_Http2ProtocolOptions{
				Http2ProtocolOptions: &corev3.Http2ProtocolOptions{ConnectionKeepalive: &corev3.KeepaliveSettings{
					Interval: durationpb.New(xdsH2KeepaliveInterval),
					Timeout:  durationpb.New(xdsH2KeepaliveTimeout),
				}},
			},
		}},
	})
	if err != nil {
		return nil, err
	}
	c := &clusterv3.Cluster{
		Name:           XDSClusterName,
		ConnectTimeout: durationpb.New(xdsConnectTimeout),
		LoadAssignment: &endpointv3.ClusterLoadAssignment{
			ClusterName: XDSClusterName,
			Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
				HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
					Address: socketAddress(opts.XDSAddress, opts.XDSPort),
				}},
			}}}},
		},
		TypedExtensionProtocolOptions: map[string]*anypb.Any{
			"envoy.extensions.upstreams.http.v3.HttpProtocolOptions": protocol,
		},
		UpstreamConnectionOptions: &clusterv3.UpstreamConnectionOptions{TcpKeepalive: &corev3.TcpKeepalive{
			KeepaliveTime:     wrapperspb.UInt32(xdsTCPKeepaliveTime),
			KeepaliveInterval: wrapperspb.UInt32(xdsTCPKeepaliveIntvl),
			KeepaliveProbes:   wrapperspb.UInt32(xdsTCPKeepaliveProbes),
		}},
	}
	if _, err := netip.ParseAddr(opts.XDSAddress); err == nil {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STATIC}
	} else {
		c.ClusterDiscoveryType = &clusterv3.Cluster_Type{Type: clusterv3.Cluster_STRICT_DNS}
		c.DnsLookupFamily = clusterv3.Cluster_V4_PREFERRED
	}
	if opts.TLS != nil {
		ts, err := xdsTransportSocket(opts.TLS)
		if err != nil {
			return nil, err
		}
		c.TransportSocket = ts
	}
	return c, nil
}

// xdsTransportSocket presents Envoy's client certificate and verifies the server's
// against the CA (and its DNS SAN against SNI when set). gRPC servers refuse TLS clients
// that negotiate no ALPN protocol; Envoy's HTTP/2 pool offers h2 on its own, and the
// explicit h2 keeps it that way.
func xdsTransportSocket(t *XDSClientTLS) (*corev3.TransportSocket, error) {
	validation := &tlsv3.CertificateValidationContext{TrustedCa: fileSource(t.CAFile)}
	if t.SNI != "" {
		validation.MatchTypedSubjectAltNames = []*tlsv3.SubjectAltNameMatcher{{
			SanType: tlsv3.SubjectAltNameMatcher_DNS,
			Matcher: &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_Exact{Exact: t.SNI}},
		}}
	}
	tlsContext, err := anypb.New(&tlsv3.UpstreamTlsContext{
		Sni: t.SNI,
		CommonTlsContext: &tlsv3.CommonTlsContext{
			AlpnProtocols: []string{"h2"},
			TlsCertificates: []*tlsv3.TlsCertificate{{
				CertificateChain: fileSource(t.CertFile),
				PrivateKey:       fileSource(t.KeyFile),
			}},
			ValidationContextType: &tlsv3.CommonTlsContext_ValidationContext{ValidationContext: validation},
		},
	})
	if err != nil {
		return nil, err
	}
	return &corev3.TransportSocket{
		Name:       "envoy.transport_sockets.tls",
		ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: tlsContext},
	}, nil
}

func fileSource(path string) *corev3.DataSource {
	return &corev3.DataSource{Specifier: &corev3.DataSource_Filename{Filename: path}}
}
