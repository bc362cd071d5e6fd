package translate

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// headerName is an HTTP field name (RFC 9110 token), the pattern Gateway API's CRD
// applies to header filters; Backend extensions and inputs that never met the API
// server are held to it here.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// checkHeaderMutation refuses what Envoy would reject in a header mutation, which would
// hold back the whole Gateway's configuration: names that are not tokens, pseudo-headers
// and Host (a URLRewrite changes Host), and values with a line break or NUL byte (which
// would also let one header smuggle another).
func checkHeaderMutation(m *ir.HeaderMutation) error {
	if m == nil {
		return nil
	}
	names := slices.Clone(m.Remove)
	for _, h := range slices.Concat(m.Set, m.Add) {
		names = append(names, h.Name)
		if strings.ContainsAny(h.Value, "\r\n\x00") {
			return fmt.Errorf("the value of header %q contains a line break or a NUL byte", h.Name)
		}
	}
	for _, n := range names {
		switch {
		case !headerName.MatchString(n):
			return fmt.Errorf("%q is not a valid header name", n)
		case strings.EqualFold(n, "host"):
			return fmt.Errorf("header %q cannot be modified by a header filter; use URLRewrite's hostname", n)
		}
	}
	return nil
}
