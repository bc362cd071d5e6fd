package envoyconfig

import (
	"slices"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Deep copies of IR values, for the build cache. The cache builds each resource from its
// own copy and keeps that copy to compare later IR with, so a caller that changes its IR
// after Build can neither change a cached resource nor make stale IR look current.
// TestCloneIsDeep proves that no field of a clone shares memory with the original.

func cloneCluster(c *ir.Cluster) *ir.Cluster {
	out := *c
	out.Endpoints = slices.Clone(c.Endpoints)
	out.TLS = clonePtr(c.TLS, cloneUpstreamTLS)
	out.CircuitBreaker = clonePtr(c.CircuitBreaker, copyValue)
	out.OutlierDetector = clonePtr(c.OutlierDetector, copyValue)
	out.RequestHeaders = clonePtr(c.RequestHeaders, cloneHeaderMutation)
	out.Credential = clonePtr(c.Credential, copyValue)
	return &out
}

func cloneUpstreamTLS(t *ir.UpstreamTLS) ir.UpstreamTLS {
	out := *t
	out.SubjectAltNames = slices.Clone(t.SubjectAltNames)
	out.CipherSuites = slices.Clone(t.CipherSuites)
	out.ALPN = slices.Clone(t.ALPN)
	return out
}

func cloneHeaderMutation(m *ir.HeaderMutation) ir.HeaderMutation {
	return ir.HeaderMutation{Set: slices.Clone(m.Set), Add: slices.Clone(m.Add), Remove: slices.Clone(m.Remove)}
}

// cloneSecret copies the secret's fields; its key material is the IR's own, which
// nothing modifies (translate.Cache keeps it by reference too).
func cloneSecret(s *ir.Secret) *ir.Secret {
	out := *s
	return &out
}

// cloneListenerHead copies what the listener resource is built from, without the
// virtual hosts.
func cloneListenerHead(l *ir.Listener) *ir.Listener {
	return &ir.Listener{
		Name: l.Name, Port: l.Port, TLS: clonePtr(l.TLS, cloneListenerTLS),
		Isolated: l.Isolated, AccessLog: l.AccessLog, ForwardProxy: l.ForwardProxy, Callers: slices.Clone(l.Callers),
		Tenants: cloneEach(l.Tenants, cloneTenantHead), Kind: l.Kind, Streams: cloneEach(l.Streams, cloneStreamRoute),
	}
}

// cloneTenantHead copies what a listener is built from of a tenant (equalTenantHead).
func cloneTenantHead(t *ir.Tenant) ir.Tenant {
	return ir.Tenant{Namespace: t.Namespace, Streams: cloneEach(t.Streams, cloneStreamRoute)}
}

func cloneStreamRoute(r *ir.StreamRoute) ir.StreamRoute {
	out := *r
	out.ServerNames = slices.Clone(r.ServerNames)
	out.Backends = cloneEach(r.Backends, cloneWeightedCluster)
	return out
}

func cloneListenerTLS(t *ir.ListenerTLS) ir.ListenerTLS {
	return ir.ListenerTLS{CertificateSecrets: slices.Clone(t.CertificateSecrets)}
}

func cloneVirtualHost(vh *ir.VirtualHost) ir.VirtualHost {
	return ir.VirtualHost{Name: vh.Name, Domains: slices.Clone(vh.Domains), Routes: cloneEach(vh.Routes, cloneRoute), Tunnels: slices.Clone(vh.Tunnels)}
}

func cloneRoute(r *ir.Route) ir.Route {
	out := *r
	out.Match.Headers = slices.Clone(r.Match.Headers)
	out.Match.QueryParams = slices.Clone(r.Match.QueryParams)
	out.RequestHeaders = clonePtr(r.RequestHeaders, cloneHeaderMutation)
	out.ResponseHeaders = clonePtr(r.ResponseHeaders, cloneHeaderMutation)
	out.Rewrite = clonePtr(r.Rewrite, cloneURLRewrite)
	out.Redirect = clonePtr(r.Redirect, cloneRedirect)
	out.DirectResponse = clonePtr(r.DirectResponse, copyValue)
	out.Backends = cloneEach(r.Backends, cloneWeightedCluster)
	out.Timeouts = clonePtr(r.Timeouts, cloneRouteTimeouts)
	out.Retry = clonePtr(r.Retry, cloneRetry)
	out.Mirrors = slices.Clone(r.Mirrors)
	return out
}

func cloneRetry(r *ir.Retry) ir.Retry {
	return ir.Retry{Codes: slices.Clone(r.Codes), Attempts: r.Attempts, Backoff: clonePtr(r.Backoff, copyValue)}
}

func cloneRouteTimeouts(t *ir.RouteTimeouts) ir.RouteTimeouts {
	return ir.RouteTimeouts{Request: clonePtr(t.Request, copyValue), BackendRequest: clonePtr(t.BackendRequest, copyValue)}
}

func cloneURLRewrite(u *ir.URLRewrite) ir.URLRewrite {
	out := *u
	out.FullPath, out.PrefixPath = clonePtr(u.FullPath, copyValue), clonePtr(u.PrefixPath, copyValue)
	return out
}

func cloneRedirect(r *ir.Redirect) ir.Redirect {
	out := *r
	out.FullPath, out.PrefixPath = clonePtr(r.FullPath, copyValue), clonePtr(r.PrefixPath, copyValue)
	return out
}

func cloneWeightedCluster(wc *ir.WeightedCluster) ir.WeightedCluster {
	out := *wc
	out.RequestHeaders = clonePtr(wc.RequestHeaders, cloneHeaderMutation)
	return out
}

// clonePtr copies the target of p with clone; nil stays nil.
func clonePtr[T any](p *T, clone func(*T) T) *T {
	if p == nil {
		return nil
	}
	v := clone(p)
	return &v
}

func copyValue[T any](p *T) T { return *p }

// cloneEach copies every element with clone, keeping nil and empty apart.
func cloneEach[T any](in []T, clone func(*T) T) []T {
	if in == nil {
		return nil
	}
	out := make([]T, len(in))
	for i := range in {
		out[i] = clone(&in[i])
	}
	return out
}
