package translate

import (
	"fmt"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// defaultRetryAttempts is how often a request is retried when a rule's retry names no
// attempts (Gateway API leaves it to the implementation): once, as Envoy does.
const defaultRetryAttempts = 1

// convertRetry turns a rule's retry into the IR. The API server already bounds codes
// to 400-599 and attempts to at least 1; the backoff must be a Gateway API duration.
func convertRetry(r *gwapiv1.HTTPRouteRetry) (*ir.Retry, error) {
	if r == nil {
		return nil, nil
	}
	out := &ir.Retry{Attempts: defaultRetryAttempts}
	if r.Attempts != nil {
		if *r.Attempts < 1 {
			return nil, fmt.Errorf("retry.attempts %d: want at least 1", *r.Attempts)
		}
		out.Attempts = uint32(*r.Attempts)
	}
	for i, c := range r.Codes {
		if c < 400 || c > 599 {
			return nil, fmt.Errorf("retry.codes[%d] %d: want a status code from 400 to 599", i, c)
		}
		out.Codes = append(out.Codes, uint32(c))
	}
	backoff, err := parseTimeout("retry.backoff", r.Backoff)
	if err != nil {
		return nil, err
	}
	out.Backoff = backoff
	return out, nil
}
