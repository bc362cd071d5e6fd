package translate

import (
	"fmt"
	"regexp"
	"time"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// gatewayDuration is GEP-2257's duration format, the pattern the HTTPRoute CRD applies;
// routes that never met the API server (portcullis translate) are held to it here.
var gatewayDuration = regexp.MustCompile(`^([0-9]{1,5}(h|m|s|ms)){1,4}$`)

// convertTimeouts turns a rule's timeouts into the IR. Like the CRD's rule, a backend
// request timeout longer than a non-zero request timeout is refused: it could never
// take effect.
func convertTimeouts(t *gwapiv1.HTTPRouteTimeouts) (*ir.RouteTimeouts, error) {
	if t == nil || (t.Request == nil && t.BackendRequest == nil) {
		return nil, nil
	}
	request, err := parseTimeout("timeouts.request", t.Request)
	if err != nil {
		return nil, err
	}
	backend, err := parseTimeout("timeouts.backendRequest", t.BackendRequest)
	if err != nil {
		return nil, err
	}
	if request != nil && backend != nil && *request != 0 && *backend > *request {
		return nil, fmt.Errorf("timeouts.backendRequest %s is longer than timeouts.request %s", *t.BackendRequest, *t.Request)
	}
	return &ir.RouteTimeouts{Request: request, BackendRequest: backend}, nil
}

func parseTimeout(field string, d *gwapiv1.Duration) (*time.Duration, error) {
	if d == nil {
		return nil, nil
	}
	if !gatewayDuration.MatchString(string(*d)) {
		return nil, fmt.Errorf("%s %q is not a Gateway API duration such as 10s, 500ms or 1m30s", field, *d)
	}
	v, err := time.ParseDuration(string(*d))
	if err != nil {
		return nil, fmt.Errorf("%s %q: %v", field, *d, err)
	}
	return &v, nil
}
