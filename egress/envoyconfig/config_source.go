package envoyconfig

import (
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
)

// adsSource points a dynamic resource at the one ADS stream each Envoy keeps with the
// control plane, so routes, endpoints and secrets arrive on the same ordered stream as
// the listeners and clusters that reference them.
func adsSource() *corev3.ConfigSource {
	return &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
}

// sdsSecret references a secret by name. Over xDS it is fetched by SDS on the ADS stream;
// in a static bootstrap the sds_config is left out, which makes Envoy resolve the name
// against static_resources.secrets. Either way no key material is inlined here.
func (b *builder) sdsSecret(name string) *tlsv3.SdsSecretConfig {
	ref := &tlsv3.SdsSecretConfig{Name: name}
	if !b.static {
		ref.SdsConfig = adsSource()
	}
	return ref
}
