package envoyconfig

import (
	"fmt"

	mutationrulesv3 "github.com/envoyproxy/go-control-plane/envoy/config/common/mutation_rules/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	credentialinjectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Upstream HTTP filters. Both mutating filters are "dual" filters in Envoy 1.40: they
// may run in a cluster's upstream filter chain, which must end with the upstream codec.
const (
	headerMutationFilter     = "envoy.filters.http.header_mutation"
	credentialInjectorFilter = "envoy.filters.http.credential_injector"
	upstreamCodecFilter      = "envoy.filters.http.upstream_codec"
	genericCredential        = "envoy.http.injected_credentials.generic"
	defaultCredentialHeader  = "Authorization"
)

// upstreamFilters are the Backend's extensions, run on every request sent to the cluster
// whatever route chose it, after the route's own filters. Headers are changed first and
// the credential injected last, so no header filter can drop or replace the credential.
// A cluster without extensions gets no filter chain at all (Envoy's default codec).
func (b *builder) upstreamFilters(c *ir.Cluster) ([]*hcmv3.HttpFilter, error) {
	var cfgs []namedConfig
	if m := c.RequestHeaders; m != nil {
		cfg, err := headerMutation(m)
		if err != nil {
			return nil, fmt.Errorf("request headers: %w", err)
		}
		cfgs = append(cfgs, namedConfig{headerMutationFilter, cfg})
	}
	if cr := c.Credential; cr != nil {
		cfg, err := b.credentialInjector(cr)
		if err != nil {
			return nil, fmt.Errorf("credential: %w", err)
		}
		cfgs = append(cfgs, namedConfig{credentialInjectorFilter, cfg})
	}
	if len(cfgs) == 0 {
		return nil, nil
	}
	cfgs = append(cfgs, namedConfig{upstreamCodecFilter, &upstreamcodecv3.UpstreamCodec{}})
	return buildEach(cfgs, (*namedConfig).filter)
}

// namedConfig is an HTTP filter before packing.
type namedConfig struct {
	name string
	cfg  proto.Message
}

func (n *namedConfig) filter() (*hcmv3.HttpFilter, error) {
	a, err := pack(n.cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", n.name, err)
	}
	return &hcmv3.HttpFilter{Name: n.name, ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: a}}, nil
}

// headerMutation is the request-header-modifier extension: removals, then overwrites,
// then appends, the order Envoy uses for route-level header changes.
func headerMutation(m *ir.HeaderMutation) (*headermutationv3.HeaderMutation, error) {
	add, err := headerOptions(m)
	if err != nil {
		return nil, err
	}
	var muts []*mutationrulesv3.HeaderMutation
	for _, name := range m.Remove {
		muts = append(muts, &mutationrulesv3.HeaderMutation{Action: &mutationrulesv3.HeaderMutation_Remove{Remove: name}})
	}
	for _, opt := range add {
		muts = append(muts, &mutationrulesv3.HeaderMutation{Action: &mutationrulesv3.HeaderMutation_Append{Append: opt}})
	}
	return &headermutationv3.HeaderMutation{Mutations: &headermutationv3.Mutations{RequestMutations: muts}}, nil
}

// credentialInjector sets the credential header from a Generic secret fetched by SDS, so
// the value only ever travels in the Secret resource. It overwrites whatever the client
// sent in that header, and without the secret the request fails with 401 instead of
// leaving unauthenticated (Envoy's default when allow_request_without_credential is off).
func (b *builder) credentialInjector(cr *ir.Credential) (*credentialinjectorv3.CredentialInjector, error) {
	if err := b.checkSecret(cr.Secret, ir.SecretGeneric); err != nil {
		return nil, err
	}
	header := cr.Header
	if header == "" {
		header = defaultCredentialHeader
	}
	generic, err := pack(&genericv3.Generic{Credential: b.sdsSecret(cr.Secret), Header: header})
	if err != nil {
		return nil, err
	}
	return &credentialinjectorv3.CredentialInjector{
		Overwrite:  true,
		Credential: &corev3.TypedExtensionConfig{Name: genericCredential, TypedConfig: generic},
	}, nil
}
