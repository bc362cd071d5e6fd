package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
)

// dynamicResources makes listeners and clusters (and, through them, routes, endpoints
// and secrets) come from one ADS stream to the xDS cluster. The stream is incremental
// (delta): an update carries only the resources that changed, so one new cluster among
// ten thousand costs Envoy one cluster, not ten thousand.
func dynamicResources() *bootstrapv3.Bootstrap_DynamicResources {
	return &bootstrapv3.Bootstrap_DynamicResources{
		AdsConfig: &corev3.ApiConfigSource{
			ApiType:                   corev3.ApiConfigSource_DELTA_GRPC,
			TransportApiVersion:       corev3.ApiVersion_V3,
			SetNodeOnFirstMessageOnly: true,
			GrpcServices: []*corev3.GrpcService{{
				TargetSpecifier: &corev3.GrpcService_EnvoyGrpc_{
					EnvoyGrpc: &corev3.GrpcService_EnvoyGrpc{ClusterName: XDSClusterName},
				},
			}},
		},
		LdsConfig: adsConfigSource(),
		CdsConfig: adsConfigSource(),
	}
}

func adsConfigSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ResourceApiVersion:    corev3.ApiVersion_V3,
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
	}
}
