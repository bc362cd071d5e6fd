package envoyconfig

import (
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// applyTimeouts sets a rule's HTTPRoute timeouts over the protocol's defaults (Envoy's
// 15 s, none for gRPC and MCP): the user's word wins. Without a request timeout, the
// backend request timeout bounds the route as well, once per try the rule's retry
// allows (with its backoff between tries), so Envoy's 15 s default cannot cut a longer
// one short and a retry is not cut off by the first try's budget. The backend request
// timeout is also set per try, which starts when Envoy starts sending upstream, as
// Gateway API defines it. A zero duration turns a timeout off.
func applyTimeouts(a *routev3.RouteAction, t *ir.RouteTimeouts, retry *ir.Retry) {
	if t == nil {
		return
	}
	switch {
	case t.Request != nil:
		setRouteTimeout(a, *t.Request)
	case t.BackendRequest != nil:
		setRouteTimeout(a, allTries(*t.BackendRequest, retry))
	}
	if t.BackendRequest != nil && *t.BackendRequest > 0 {
		a.RetryPolicy = &routev3.RetryPolicy{PerTryTimeout: durationpb.New(*t.BackendRequest)}
	}
}

// allTries is how long every try of a request may take together: each bounded by
// perTry, with the longest backoff between them. Zero (no timeout) stays zero.
func allTries(perTry time.Duration, retry *ir.Retry) time.Duration {
	if retry == nil || perTry == 0 {
		return perTry
	}
	total := perTry * time.Duration(retry.Attempts+1)
	if retry.Backoff != nil {
		total += maxBackoff(*retry.Backoff) * time.Duration(retry.Attempts)
	}
	return total
}

// setRouteTimeout bounds the whole request. A route with max_stream_duration (gRPC
// routes, which honour the client's grpc-timeout) makes Envoy ignore the route
// timeout, so there the stream duration carries it, and a client's grpc-timeout may
// shorten it but not lengthen it.
func setRouteTimeout(a *routev3.RouteAction, d time.Duration) {
	a.Timeout = durationpb.New(d)
	if a.MaxStreamDuration == nil || d == 0 {
		return
	}
	a.MaxStreamDuration.MaxStreamDuration = durationpb.New(d)
	a.MaxStreamDuration.GrpcTimeoutHeaderMax = durationpb.New(d)
}
