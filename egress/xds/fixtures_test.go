package xds

import (
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// Hand-built xDS resources for the tests. They do not use the envoyconfig builders on
// purpose: the xds package must work with whatever valid resources it is given.

func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}

func mustAny(t testing.TB, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// httpListener listens on 127.0.0.1:port; its HTTP connection manager fetches the
// route configuration routeName by RDS over ADS. With secretName set it terminates TLS
// with that certificate, fetched by SDS over ADS.
func httpListener(t testing.TB, name string, port uint32, routeName, secretName string) *listenerv3.Listener {
	t.Helper()
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix: name,
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{
			ConfigSource:    adsSource(),
			RouteConfigName: routeName,
		}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "envoy.filters.http.router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
		}},
	}
	chain := &listenerv3.FilterChain{Filters: []*listenerv3.Filter{{
		Name:       "envoy.filters.network.http_connection_manager",
		ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)},
	}}}
	if secretName != "" {
		chain.TransportSocket = &corev3.TransportSocket{
			Name: "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.DownstreamTlsContext{
				CommonTlsContext: &tlsv3.CommonTlsContext{
					TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: secretName, SdsConfig: adsSource()}},
				},
			})},
		}
	}
	return &listenerv3.Listener{
		Name: name,
		Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
			Address:       "127.0.0.1",
			PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
		}}},
		FilterChains: []*listenerv3.FilterChain{chain},
	}
}

// directRoute answers every request with 200 and body.
func directRoute(name, body string) *routev3.RouteConfiguration {
	return &routev3.RouteConfiguration{
		Name: name,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "all",
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{
					Status: 200,
					Body:   &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: body}},
				}},
			}},
		}},
	}
}

// badRegexRoute passes ValidateAll but Envoy rejects it: "(" is no RE2 expression.
func badRegexRoute(name string) *routev3.RouteConfiguration {
	rc := directRoute(name, "never")
	rc.VirtualHosts[0].Routes[0].Match = &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_SafeRegex{
		SafeRegex: &matcherv3.RegexMatcher{Regex: "("},
	}}
	return rc
}

// edsCluster fetches its endpoints by EDS over ADS; with secretName set it originates
// TLS with that client certificate and validates the server with caSecretName.
func edsCluster(t testing.TB, name, secretName, caSecretName string) *clusterv3.Cluster {
	t.Helper()
	c := &clusterv3.Cluster{
		Name:                 name,
		ConnectTimeout:       durationpb.New(2 * time.Second),
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: adsSource()},
	}
	if secretName != "" {
		c.TransportSocket = &corev3.TransportSocket{
			Name: "envoy.transport_sockets.tls",
			ConfigType: &corev3.TransportSocket_TypedConfig{TypedConfig: mustAny(t, &tlsv3.UpstreamTlsContext{
				CommonTlsContext: &tlsv3.CommonTlsContext{
					TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: secretName, SdsConfig: adsSource()}},
					ValidationContextType: &tlsv3.CommonTlsContext_ValidationContextSdsSecretConfig{
						ValidationContextSdsSecretConfig: &tlsv3.SdsSecretConfig{Name: caSecretName, SdsConfig: adsSource()},
					},
				},
			})},
		}
	}
	return c
}

func endpoints(name string, port uint32) *endpointv3.ClusterLoadAssignment {
	return &endpointv3.ClusterLoadAssignment{
		ClusterName: name,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{LbEndpoints: []*endpointv3.LbEndpoint{{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address:       "127.0.0.1",
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: port},
				}}},
			}},
		}}}},
	}
}

func certSecret(name string, cert xdstest.Cert) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_TlsCertificate{TlsCertificate: &tlsv3.TlsCertificate{
		CertificateChain: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert.CertPEM}},
		PrivateKey:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert.KeyPEM}},
	}}}
}

func caSecret(name string, cert xdstest.Cert) *tlsv3.Secret {
	return &tlsv3.Secret{Name: name, Type: &tlsv3.Secret_ValidationContext{ValidationContext: &tlsv3.CertificateValidationContext{
		TrustedCa: &corev3.DataSource{Specifier: &corev3.DataSource_InlineBytes{InlineBytes: cert.CertPEM}},
	}}}
}

// helloResources is one HTTP listener answering body on port.
func helloResources(t testing.TB, port uint32, body string) envoyconfig.Resources {
	return envoyconfig.Resources{
		Listeners: []*listenerv3.Listener{httpListener(t, "http", port, "http", "")},
		Routes:    []*routev3.RouteConfiguration{directRoute("http", body)},
	}
}
