package envoyconfig

import (
	"slices"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// Equality of IR values, for the build cache: two values are equal when every builder
// would turn them into equal resources. A nil and an empty slice are equal (the builders
// only look at lengths and elements); a nil and a non-nil pointer are not. They are
// written out by hand because reflect.DeepEqual costs ten times more, which matters at
// tens of thousands of clusters; TestEqualityCoversEveryField proves that every field of
// every IR type is compared, so a field added to the IR cannot be forgotten here.
//
// The IR is not modified once built from (Cache), so a pointer or a slice of the same
// length over the same memory is equal without a look at what it holds: what the
// translator kept and hands out again (an unchanged Backend's clusters, a kept virtual
// host's routes: host_reuse.go in egress/translate) compares in one step.
//
// Comparing what is not the same memory is the build's early cutoff. A translation
// that attaches every route afresh (a ReferenceGrant, a namespace's labels or the
// Gateway changed) makes every route entry anew, equal to the last; without the cutoff
// every virtual host is built, validated and hashed again. Reuse by identity alone was
// tried (2026-12-03): with an unrelated ReferenceGrant toggled at 10,000 routes a
// change took 221-233 ms instead of 120-122 ms (build 54-56 ms against 6 ms, publish
// 56-61 ms against 3 ms).

// equalClusterSettings compares what the cluster resource is built from over xDS:
// everything but the endpoints, which go to the load assignment. A DNS answer that
// changes then rebuilds one load assignment, not the cluster.
func equalClusterSettings(a, b *ir.Cluster) bool {
	return a.Name == b.Name && a.Origin == b.Origin && a.Protocol == b.Protocol &&
		equalPtr(a.TLS, b.TLS, equalUpstreamTLS) &&
		a.ConnectTimeout == b.ConnectTimeout && a.IdleTimeout == b.IdleTimeout &&
		equalPtr(a.CircuitBreaker, b.CircuitBreaker, equalValue) &&
		equalPtr(a.OutlierDetector, b.OutlierDetector, equalValue) &&
		equalPtr(a.RequestHeaders, b.RequestHeaders, equalHeaderMutation) &&
		equalPtr(a.Credential, b.Credential, equalValue)
}

// equalEndpoints compares what the load assignment is built from.
func equalEndpoints(a, b *ir.Cluster) bool {
	return a.Name == b.Name && equalSlice(a.Endpoints, b.Endpoints)
}

func equalUpstreamTLS(a, b *ir.UpstreamTLS) bool {
	return a.SNI == b.SNI && a.CASecret == b.CASecret && a.SystemCA == b.SystemCA &&
		a.InsecureSkipVerify == b.InsecureSkipVerify && equalSlice(a.SubjectAltNames, b.SubjectAltNames) &&
		a.ClientCertificateSecret == b.ClientCertificateSecret && a.MinVersion == b.MinVersion &&
		a.MaxVersion == b.MaxVersion && equalSlice(a.CipherSuites, b.CipherSuites) && equalSlice(a.ALPN, b.ALPN)
}

func equalHeaderMutation(a, b *ir.HeaderMutation) bool {
	return equalSlice(a.Set, b.Set) && equalSlice(a.Add, b.Add) && equalSlice(a.Remove, b.Remove)
}

// equalListenerHead compares what the listener resource is built from over xDS: not
// the virtual hosts, shared or a tenant's, which go to route configurations. Of a
// tenant the listener reads the namespace (its chain, its callers' branch of the
// matcher) and the stream routes (TLS and TCP listeners carry their routes);
// TestListenerIgnoresTenantVirtualHosts checks it on every golden IR. Comparing the
// tenants' tables too made every route change on a tenant-isolating Gateway rebuild its
// listener (a chain per namespace and a matcher with every pod) for an equal result.
func equalListenerHead(a, b *ir.Listener) bool {
	return a.Name == b.Name && a.Port == b.Port && equalPtr(a.TLS, b.TLS, equalListenerTLS) &&
		a.Isolated == b.Isolated && a.AccessLog == b.AccessLog && a.ForwardProxy == b.ForwardProxy &&
		a.Kind == b.Kind && equalSliceFunc(a.Streams, b.Streams, equalStreamRoute) &&
		equalSlice(a.Callers, b.Callers) &&
		equalSliceFunc(a.Tenants, b.Tenants, equalTenantHead)
}

func equalTenantHead(a, b ir.Tenant) bool {
	return a.Namespace == b.Namespace && equalSliceFunc(a.Streams, b.Streams, equalStreamRoute)
}

func equalTenant(a, b ir.Tenant) bool {
	return equalTenantHead(a, b) && equalSliceFunc(a.VirtualHosts, b.VirtualHosts, equalVirtualHost)
}

func equalStreamRoute(a, b ir.StreamRoute) bool {
	return a.Name == b.Name && equalSlice(a.ServerNames, b.ServerNames) &&
		equalSliceFunc(a.Backends, b.Backends, equalWeightedCluster) && a.InvalidWeight == b.InvalidWeight
}

func equalListener(a, b *ir.Listener) bool {
	return equalListenerHead(a, b) && equalSliceFunc(a.VirtualHosts, b.VirtualHosts, equalVirtualHost) &&
		equalSliceFunc(a.Tenants, b.Tenants, equalTenant)
}

func equalListenerTLS(a, b *ir.ListenerTLS) bool {
	return equalSlice(a.CertificateSecrets, b.CertificateSecrets)
}

func equalVirtualHost(a, b ir.VirtualHost) bool {
	return a.Name == b.Name && equalSlice(a.Domains, b.Domains) && equalSliceFunc(a.Routes, b.Routes, equalRoute) &&
		equalSlice(a.Tunnels, b.Tunnels)
}

func equalRoute(a, b ir.Route) bool {
	return a.Name == b.Name && equalRouteMatch(&a.Match, &b.Match) &&
		equalPtr(a.RequestHeaders, b.RequestHeaders, equalHeaderMutation) &&
		equalPtr(a.ResponseHeaders, b.ResponseHeaders, equalHeaderMutation) &&
		equalPtr(a.Rewrite, b.Rewrite, equalURLRewrite) &&
		equalPtr(a.Redirect, b.Redirect, equalRedirect) &&
		equalPtr(a.DirectResponse, b.DirectResponse, equalValue) &&
		equalSliceFunc(a.Backends, b.Backends, equalWeightedCluster) && a.InvalidWeight == b.InvalidWeight &&
		equalPtr(a.Timeouts, b.Timeouts, equalRouteTimeouts) && equalPtr(a.Retry, b.Retry, equalRetry) &&
		equalSlice(a.Mirrors, b.Mirrors)
}

func equalRetry(a, b *ir.Retry) bool {
	return equalSlice(a.Codes, b.Codes) && a.Attempts == b.Attempts && equalPtr(a.Backoff, b.Backoff, equalValue)
}

func equalRouteTimeouts(a, b *ir.RouteTimeouts) bool {
	return equalPtr(a.Request, b.Request, equalValue) && equalPtr(a.BackendRequest, b.BackendRequest, equalValue)
}

func equalRouteMatch(a, b *ir.RouteMatch) bool {
	return a.PathType == b.PathType && a.Path == b.Path && equalSlice(a.Headers, b.Headers) &&
		equalSlice(a.QueryParams, b.QueryParams) && a.Method == b.Method
}

func equalURLRewrite(a, b *ir.URLRewrite) bool {
	return a.Hostname == b.Hostname && equalPtr(a.FullPath, b.FullPath, equalValue) &&
		equalPtr(a.PrefixPath, b.PrefixPath, equalValue)
}

func equalRedirect(a, b *ir.Redirect) bool {
	return a.Scheme == b.Scheme && a.Hostname == b.Hostname && a.Port == b.Port &&
		equalPtr(a.FullPath, b.FullPath, equalValue) && equalPtr(a.PrefixPath, b.PrefixPath, equalValue) &&
		a.StatusCode == b.StatusCode
}

func equalWeightedCluster(a, b ir.WeightedCluster) bool {
	return a.Cluster == b.Cluster && a.Weight == b.Weight && equalPtr(a.RequestHeaders, b.RequestHeaders, equalHeaderMutation)
}

// equalPtr compares two pointers: both nil, or both set with equal targets.
func equalPtr[T any](a, b *T, eq func(a, b *T) bool) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a == b || eq(a, b)
}

// equalSlice compares two slices of comparable elements; the same memory is equal.
func equalSlice[T comparable](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}

// equalSliceFunc compares two slices element by element with eq; the same memory is
// equal.
func equalSliceFunc[T any](a, b []T, eq func(a, b T) bool) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.EqualFunc(a, b, eq))
}

// equalValue compares the targets of pointers to comparable values.
func equalValue[T comparable](a, b *T) bool { return *a == *b }
