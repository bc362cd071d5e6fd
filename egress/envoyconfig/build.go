package envoyconfig

import (
	"cmp"
	"fmt"
	"slices"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// DefaultSystemCAFile is the trust store of the Envoy image, used when Options leaves it empty.
const DefaultSystemCAFile = "/etc/ssl/certs/ca-certificates.crt"

// Options are the few facts about the Envoy deployment that the IR does not carry.
type Options struct {
	// SystemCAFile is the PEM trust store used when UpstreamTLS.SystemCA is set
	// (default DefaultSystemCAFile).
	SystemCAFile string
}

// Build returns the xDS resources of one Gateway. It is pure (no I/O) and deterministic:
// the same IR always yields equal protos, so snapshot versions can be content hashes.
// Key material only ever appears in Resources.Secrets; everything else names secrets for SDS.
func Build(gw ir.Gateway, opts Options) (Resources, error) {
	b, err := newBuilder(gw, opts, false)
	if err != nil {
		return Resources{}, err
	}
	return b.resources()
}

// builder holds one Gateway's IR indexed by name. static switches the few places where a
// static bootstrap differs from xDS: inline routes, STATIC clusters, secrets by bare name.
type builder struct {
	gw       ir.Gateway
	opts     Options
	static   bool
	clusters map[string]*ir.Cluster
	secrets  map[string]*ir.Secret
}

func newBuilder(gw ir.Gateway, opts Options, static bool) (*builder, error) {
	if opts.SystemCAFile == "" {
		opts.SystemCAFile = DefaultSystemCAFile
	}
	b := &builder{
		gw:       gw,
		opts:     opts,
		static:   static,
		clusters: make(map[string]*ir.Cluster, len(gw.Clusters)),
		secrets:  make(map[string]*ir.Secret, len(gw.Secrets)),
	}
	for i := range gw.Clusters {
		c := &gw.Clusters[i]
		if _, dup := b.clusters[c.Name]; dup {
			return nil, fmt.Errorf("cluster %q is defined twice", c.Name)
		}
		b.clusters[c.Name] = c
	}
	for i := range gw.Secrets {
		s := &gw.Secrets[i]
		if _, dup := b.secrets[s.Name]; dup {
			return nil, fmt.Errorf("secret %q is defined twice", s.Name)
		}
		b.secrets[s.Name] = s
	}
	return b, nil
}

// resources builds every resource type, then sorts and validates them so that a broken
// IR surfaces here as an error rather than as a NACK from every Envoy of the fleet.
func (b *builder) resources() (Resources, error) {
	var r Resources
	var err error
	if r.Listeners, err = buildEach(b.gw.Listeners, b.listener); err != nil {
		return Resources{}, err
	}
	if r.Routes, err = buildEach(b.gw.Listeners, b.routeConfiguration); err != nil {
		return Resources{}, err
	}
	if r.Clusters, err = buildEach(b.gw.Clusters, b.cluster); err != nil {
		return Resources{}, err
	}
	if r.Endpoints, err = buildEach(b.gw.Clusters, loadAssignment); err != nil {
		return Resources{}, err
	}
	if r.Secrets, err = buildEach(b.gw.Secrets, secret); err != nil {
		return Resources{}, err
	}
	r.sort()
	return r, r.validate()
}

// sort orders every slice by name, as Resources promises, whatever order the IR had.
func (r *Resources) sort() {
	sortByName(r.Listeners, (*listenerv3.Listener).GetName)
	sortByName(r.Routes, (*routev3.RouteConfiguration).GetName)
	sortByName(r.Clusters, (*clusterv3.Cluster).GetName)
	sortByName(r.Endpoints, (*endpointv3.ClusterLoadAssignment).GetClusterName)
	sortByName(r.Secrets, (*tlsv3.Secret).GetName)
}

// validate runs the protoc-gen-validate rules of every resource, the same checks Envoy
// applies before accepting a config.
func (r *Resources) validate() error {
	for _, err := range []error{
		validateEach("listener", r.Listeners, (*listenerv3.Listener).GetName),
		validateEach("route configuration", r.Routes, (*routev3.RouteConfiguration).GetName),
		validateEach("cluster", r.Clusters, (*clusterv3.Cluster).GetName),
		validateEach("cluster load assignment", r.Endpoints, (*endpointv3.ClusterLoadAssignment).GetClusterName),
		validateEach("secret", r.Secrets, (*tlsv3.Secret).GetName),
	} {
		if err != nil {
			return err
		}
	}
	return nil
}

// buildEach applies build to every element of in, stopping at the first error.
func buildEach[In any, Out any](in []In, build func(*In) (Out, error)) ([]Out, error) {
	out := make([]Out, 0, len(in))
	for i := range in {
		o, err := build(&in[i])
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func sortByName[T any](s []T, name func(T) string) {
	slices.SortStableFunc(s, func(a, b T) int { return cmp.Compare(name(a), name(b)) })
}

// validatable is what protoc-gen-validate generates for every Envoy message.
type validatable interface{ ValidateAll() error }

func validateEach[T validatable](kind string, msgs []T, name func(T) string) error {
	for _, m := range msgs {
		if err := m.ValidateAll(); err != nil {
			return fmt.Errorf("invalid %s %q: %w", kind, name(m), err)
		}
	}
	return nil
}
