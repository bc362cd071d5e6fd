package envoyconfig

import (
	"fmt"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// Static returns a complete static Envoy bootstrap for one Gateway, serving the same
// traffic as Build's xDS resources: listeners with their route configurations inline,
// STATIC clusters with their endpoints inline, and the secrets in
// static_resources.secrets, still referenced by name. The admin listener is on
// 127.0.0.1:adminPort. It is for tests and for running Envoy without a control plane.
func Static(gw ir.Gateway, opts Options, adminPort uint32) (*bootstrapv3.Bootstrap, error) {
	b, err := newBuilder(gw, opts, true, nil)
	if err != nil {
		return nil, err
	}
	r, err := b.resources()
	if err != nil {
		return nil, err
	}
	bs := &bootstrapv3.Bootstrap{
		Node:  &corev3.Node{Id: gw.Name, Cluster: gw.Name},
		Admin: &bootstrapv3.Admin{Address: socketAddress("127.0.0.1", adminPort)},
		// The same runtime as the xDS bootstrap: the translator refuses regexes against
		// its program-size limit, not Envoy's lower default.
		LayeredRuntime: bootstrap.LayeredRuntime(),
		StaticResources: &bootstrapv3.Bootstrap_StaticResources{
			Listeners: r.Listeners,
			Clusters:  r.Clusters,
			Secrets:   r.Secrets,
		},
	}
	if err := bs.ValidateAll(); err != nil {
		return nil, fmt.Errorf("invalid bootstrap: %w", err)
	}
	return bs, nil
}
