package envoyconfig

import (
	"time"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// retryOn are the conditions Envoy retries on besides the rule's status codes: a
// connection that could not be made, or a stream the upstream refused before reading
// it. Neither reached the Backend, so a retry never repeats a payment or an order.
// Resets and timeouts after the request was sent are not retried: the Backend may
// have acted on it.
const retryOn = "connect-failure,refused-stream"

// applyRetry adds the rule's retry to the route, keeping the per-try timeout
// applyTimeouts may have set (the backend request timeout bounds each try).
func applyRetry(a *routev3.RouteAction, r *ir.Retry) {
	if r == nil {
		return
	}
	if a.RetryPolicy == nil {
		a.RetryPolicy = &routev3.RetryPolicy{}
	}
	p := a.RetryPolicy
	p.RetryOn = retryOn
	if len(r.Codes) > 0 {
		p.RetryOn += ",retriable-status-codes"
		p.RetriableStatusCodes = r.Codes
	}
	p.NumRetries = wrapperspb.UInt32(r.Attempts)
	if r.Backoff != nil && *r.Backoff > 0 {
		p.RetryBackOff = &routev3.RetryPolicy_RetryBackOff{BaseInterval: durationpb.New(*r.Backoff), MaxInterval: durationpb.New(maxBackoff(*r.Backoff))}
	}
}

// maxBackoff caps Envoy's exponential backoff at ten times the rule's backoff (Envoy's
// own default cap). Envoy jitters each wait between zero and the current interval, so a
// retry may come sooner than the backoff Gateway API calls a minimum; README says so.
func maxBackoff(base time.Duration) time.Duration { return 10 * base }
