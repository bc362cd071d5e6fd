package controllers

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// heldBack is why a Gateway's new configuration was not sent, or its fleet not
// provisioned, for a reason that may pass: a NetworkPolicy or a Deployment the API
// server refused to write. The status says so, and the reconcile fails, so that the
// controller tries again (with backoff) without waiting for another change: the
// translation that made the configuration is not an input event, and nothing else would
// bring it to Envoy while the cluster is quiet. A configuration that could not be built
// is not held back: it fails the same way until its input changes.
type heldBack struct{ err error }

func (h heldBack) Error() string { return h.err.Error() }
func (h heldBack) Unwrap() error { return h.err }

// heldBackErrors joins the held-back problems, in Gateway order; nil when there are none.
func heldBackErrors(problems map[string]error) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(problems)) {
		var h heldBack
		if errors.As(problems[name], &h) {
			errs = append(errs, fmt.Errorf("Gateway %s: %w", name, h.err))
		}
	}
	return errors.Join(errs...)
}
