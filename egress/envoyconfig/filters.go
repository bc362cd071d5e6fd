package envoyconfig

import (
	"fmt"
	"slices"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// setRequestHeaders applies a rule's RequestHeaderModifier. Envoy removes listed headers
// before adding, so a header both removed and set ends up set.
func setRequestHeaders(r *routev3.Route, m *ir.HeaderMutation) error {
	if m == nil {
		return nil
	}
	add, err := headerOptions(m)
	if err != nil {
		return err
	}
	r.RequestHeadersToAdd, r.RequestHeadersToRemove = add, m.Remove
	return nil
}

// setResponseHeaders applies a rule's ResponseHeaderModifier.
func setResponseHeaders(r *routev3.Route, m *ir.HeaderMutation) error {
	if m == nil {
		return nil
	}
	add, err := headerOptions(m)
	if err != nil {
		return err
	}
	r.ResponseHeadersToAdd, r.ResponseHeadersToRemove = add, m.Remove
	return nil
}

// headerOptions turns Set into overwrites and Add into appends (another value next to
// the existing ones), after checking that Envoy lets every named header be changed.
func headerOptions(m *ir.HeaderMutation) ([]*corev3.HeaderValueOption, error) {
	if err := checkModifiable(m); err != nil {
		return nil, err
	}
	var out []*corev3.HeaderValueOption
	for _, h := range m.Set {
		out = append(out, headerOption(h, corev3.HeaderValueOption_OVERWRITE_IF_EXISTS_OR_ADD))
	}
	for _, h := range m.Add {
		out = append(out, headerOption(h, corev3.HeaderValueOption_APPEND_IF_EXISTS_OR_ADD))
	}
	return out, nil
}

func headerOption(h ir.Header, action corev3.HeaderValueOption_HeaderAppendAction) *corev3.HeaderValueOption {
	return &corev3.HeaderValueOption{
		Header:       &corev3.HeaderValue{Key: h.Name, Value: literalHeaderValue(h.Value)},
		AppendAction: action,
	}
}

// literalHeaderValue escapes "%": Envoy reads header values as format strings
// ("%REQ(x)%"), and Gateway API values are literal text.
func literalHeaderValue(v string) string { return strings.ReplaceAll(v, "%", "%%") }

// checkModifiable rejects pseudo-headers and Host, which Envoy refuses to add or remove
// through header mutations (Host is changed by a URL rewrite instead).
func checkModifiable(m *ir.HeaderMutation) error {
	names := slices.Clone(m.Remove)
	for _, h := range slices.Concat(m.Set, m.Add) {
		names = append(names, h.Name)
	}
	for _, n := range names {
		if strings.HasPrefix(n, ":") || strings.EqualFold(n, "host") {
			return fmt.Errorf("header %q cannot be modified by a header filter", n)
		}
	}
	return nil
}
