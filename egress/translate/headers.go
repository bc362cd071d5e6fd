package translate

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// headerName is an HTTP field name (RFC 9110 token), the pattern Gateway API's CRD
// applies to header filters and header matches; Backend extensions and inputs that never
// met the API server are held to it here.
var headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")

// maxHeaderBytes is the longest header name or value Envoy's configuration holds
// (HeaderValue, HeaderMatcher and HeaderMutation all validate it); a longer one fails
// validation of the whole Gateway's configuration.
const maxHeaderBytes = 16384

// checkHeaderName refuses a header name Envoy would reject or read as another header:
// one that is not a token (a pseudo-header, a space, a colon) or is too long. Every
// place a tenant names a header goes through it.
func checkHeaderName(n string) error {
	switch {
	case !headerName.MatchString(n):
		return fmt.Errorf("%q is not a valid header name", n)
	case len(n) > maxHeaderBytes:
		return fmt.Errorf("the header name is longer than %d bytes", maxHeaderBytes)
	}
	return nil
}

// checkMutableHeaderName is checkHeaderName for a header Portcullis sets or removes:
// Host is refused too, since Envoy refuses to mutate it (a URLRewrite changes it).
func checkMutableHeaderName(n string) error {
	if err := checkHeaderName(n); err != nil {
		return err
	}
	if strings.EqualFold(n, "host") {
		return fmt.Errorf("header %q cannot be set or removed; use URLRewrite's hostname", n)
	}
	return nil
}

// checkHeaderValue refuses a value with a line break or a NUL byte, which Envoy rejects
// and which would let one header smuggle another, and one too long for Envoy.
func checkHeaderValue(v string) error {
	switch {
	case strings.ContainsAny(v, "\r\n\x00"):
		return errors.New("the value contains a line break or a NUL byte")
	case len(v) > maxHeaderBytes:
		return fmt.Errorf("the value is longer than %d bytes", maxHeaderBytes)
	}
	return nil
}

// checkHeaderMutation refuses what Envoy would reject in a header mutation, which would
// hold back the whole Gateway's configuration. The error names the entry, e.g.
// "set[1].value: ...".
func checkHeaderMutation(m *ir.HeaderMutation) error {
	if m == nil {
		return nil
	}
	if err := checkHeaders("set", m.Set); err != nil {
		return err
	}
	if err := checkHeaders("add", m.Add); err != nil {
		return err
	}
	for i, n := range m.Remove {
		if err := checkMutableHeaderName(n); err != nil {
			return fmt.Errorf("remove[%d]: %v", i, err)
		}
	}
	return nil
}

func checkHeaders(field string, headers []ir.Header) error {
	for i, h := range headers {
		if err := checkMutableHeaderName(h.Name); err != nil {
			return fmt.Errorf("%s[%d].name: %v", field, i, err)
		}
		if err := checkHeaderValue(h.Value); err != nil {
			return fmt.Errorf("%s[%d].value: %v", field, i, err)
		}
	}
	return nil
}
