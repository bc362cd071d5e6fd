package envoyconfig

import (
	"cmp"
	"fmt"
	"net/netip"
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
	// ListenAddress is the IP address Gateway listeners bind (default DefaultListenAddress,
	// every interface: in a pod, the Service reaches Envoy that way). An Envoy on a
	// developer's machine binds loopback instead, so it is no open egress proxy for the
	// machine's network.
	ListenAddress string
}

// DefaultListenAddress is every IPv4 interface, used when Options leaves ListenAddress empty.
const DefaultListenAddress = "0.0.0.0"

// Build returns the xDS resources of one Gateway. It is pure (no I/O) and deterministic:
// the same IR always yields equal protos, so snapshot versions can be content hashes.
// Key material only ever appears in Resources.Secrets; everything else names secrets for SDS.
//
// Build reuses, through a process-wide Cache, the messages of the Gateway's previous
// build for every resource whose IR did not change: the returned messages must be
// treated as read-only.
func Build(gw ir.Gateway, opts Options) (Resources, error) {
	return defaultCache.Build(gw, opts)
}

// builder holds one Gateway's IR indexed by name. static switches the few places where a
// static bootstrap differs from xDS: inline routes, STATIC clusters, secrets by bare name.
type builder struct {
	gw       ir.Gateway
	opts     Options
	static   bool
	clusters byName[*ir.Cluster]
	secrets  byName[ir.Secret]
	// tables are the route tables of every listener (routeTables), built once.
	tables []ir.Listener
	// memo is the Gateway's last build, whose messages may be reused, updated in place to
	// become this build's; empty, keeping nothing, when building without a Cache.
	memo *gatewayMemo
	// secretsInPlace tells that the last build had the same secret names in the same
	// order; secretsAsBefore is set once the secrets are built when they are the last
	// build's (secrets_as_before.go).
	secretsInPlace, secretsAsBefore bool
}

// withDefaults fills the options Build defaults.
func withDefaults(opts Options) Options {
	if opts.SystemCAFile == "" {
		opts.SystemCAFile = DefaultSystemCAFile
	}
	if opts.ListenAddress == "" {
		opts.ListenAddress = DefaultListenAddress
	}
	return opts
}

// newBuilder indexes gw for a build that starts from memo (nil: from nothing).
func newBuilder(gw ir.Gateway, opts Options, static bool, memo *gatewayMemo) (*builder, error) {
	if memo == nil {
		memo = &gatewayMemo{}
	}
	b := &builder{gw: gw, opts: withDefaults(opts), static: static, memo: memo}
	if _, err := netip.ParseAddr(b.opts.ListenAddress); err != nil {
		return nil, fmt.Errorf("listen address %q is not an IP address", b.opts.ListenAddress)
	}
	var err error
	if b.clusters, err = indexByName(gw.Clusters, func(c **ir.Cluster) string { return (*c).Name }, memo.clusters.placesOf(), "cluster"); err != nil {
		return nil, err
	}
	if b.secrets, err = indexByName(gw.Secrets, func(s *ir.Secret) string { return s.Name }, memo.secrets.placesOf(), "secret"); err != nil {
		return nil, err
	}
	return b, nil
}

// routeTables returns the route tables of every listener, each as a listener value.
func (b *builder) routeTables() []ir.Listener {
	if b.tables == nil {
		b.tables = make([]ir.Listener, 0, len(b.gw.Listeners))
		for i := range b.gw.Listeners {
			b.tables = append(b.tables, routeTables(&b.gw.Listeners[i])...)
		}
	}
	return b.tables
}

// resources builds every resource type, then sorts and validates them so that a broken
// IR surfaces here as an error rather than as a NACK from every Envoy of the fleet.
// Messages reused from the last build were validated then; only fresh ones are now.
func (b *builder) resources() (Resources, error) {
	var r, fresh Resources
	var err error
	if r.Secrets, fresh.Secrets, err = buildAll(b.gw.Secrets, b.cachedSecret); err != nil {
		return Resources{}, err
	}
	b.secretsAsBefore = b.sameSecretsAsLastBuild(len(fresh.Secrets))
	if r.Listeners, fresh.Listeners, err = buildAll(b.gw.Listeners, b.cachedListener); err != nil {
		return Resources{}, err
	}
	if r.Routes, fresh.Routes, err = buildAll(b.routeTables(), b.cachedRoutes); err != nil {
		return Resources{}, err
	}
	if r.Clusters, fresh.Clusters, err = buildAll(b.gw.Clusters, b.cachedCluster); err != nil {
		return Resources{}, err
	}
	if r.Endpoints, fresh.Endpoints, err = buildAll(b.gw.Clusters, b.cachedEndpoints); err != nil {
		return Resources{}, err
	}
	r.sort()
	fresh.sort()
	return r, fresh.validate()
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

// buildAll is buildEach for builders that may reuse a message: it also returns the
// messages that were built afresh.
func buildAll[In any, Out any](in []In, build func(int, *In) (Out, bool, error)) (all, fresh []Out, err error) {
	all = make([]Out, 0, len(in))
	for i := range in {
		o, isFresh, err := build(i, &in[i])
		if err != nil {
			return nil, nil, err
		}
		all = append(all, o)
		if isFresh {
			fresh = append(fresh, o)
		}
	}
	return all, fresh, nil
}

// sortByName orders messages by name, keeping the order of equal names. The IR from
// translation comes in name order already: checking that costs one comparison per
// message, a stable sort many more.
func sortByName[T any](s []T, name func(T) string) {
	byName := func(a, b T) int { return cmp.Compare(name(a), name(b)) }
	if !slices.IsSortedFunc(s, byName) {
		slices.SortStableFunc(s, byName)
	}
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
