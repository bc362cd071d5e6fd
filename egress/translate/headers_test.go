package translate

import (
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
)

func TestCheckHeaderMutation(t *testing.T) {
	long := strings.Repeat("v", maxHeaderBytes+1)
	cases := []struct {
		name    string
		m       ir.HeaderMutation
		wantErr string // "" means accepted
	}{
		{"tokens and plain values", ir.HeaderMutation{Set: []ir.Header{{Name: "x-team", Value: "blue"}}, Add: []ir.Header{{Name: "x-b!#$%&'*+.^_`|~", Value: ""}}, Remove: []string{"x-old"}}, ""},
		{"a space in a set name", ir.HeaderMutation{Set: []ir.Header{{Name: "x ok", Value: "v"}}}, `set[0].name: "x ok" is not a valid header name`},
		{"a pseudo-header added", ir.HeaderMutation{Add: []ir.Header{{Name: "ok", Value: "v"}, {Name: ":path", Value: "/"}}}, `add[1].name: ":path"`},
		{"a line break in a value", ir.HeaderMutation{Set: []ir.Header{{Name: "x", Value: "a\r\nx-injected: 1"}}}, "set[0].value: the value contains a line break"},
		{"a NUL byte in a value", ir.HeaderMutation{Add: []ir.Header{{Name: "x", Value: "a\x00"}}}, "add[0].value"},
		{"a value too long", ir.HeaderMutation{Set: []ir.Header{{Name: "x", Value: long}}}, "longer than 16384 bytes"},
		{"Host removed", ir.HeaderMutation{Remove: []string{"x", "HOST"}}, `remove[1]: header "HOST" cannot be set or removed`},
		{"an empty name removed", ir.HeaderMutation{Remove: []string{""}}, `remove[0]: "" is not a valid header name`},
		{"a name too long", ir.HeaderMutation{Remove: []string{long}}, "header name is longer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, checkHeaderMutation(&tc.m), tc.wantErr)
		})
	}
}

func TestParseCredentialHeader(t *testing.T) {
	cases := []struct {
		name, config, wantErr string
	}{
		{"default header", `{"secretRef":{"name":"s"},"key":"k"}`, ""},
		{"custom header and prefix", `{"secretRef":{"name":"s"},"key":"k","header":"X-Api-Key","prefix":"Bearer "}`, ""},
		{"a space in the header", `{"secretRef":{"name":"s"},"key":"k","header":"bad header"}`, `config.header: "bad header" is not a valid header name`},
		{"a pseudo-header", `{"secretRef":{"name":"s"},"key":"k","header":":authority"}`, "config.header"},
		{"Host", `{"secretRef":{"name":"s"},"key":"k","header":"host"}`, `config.header: header "host" cannot be set`},
		{"a line break in the prefix", `{"secretRef":{"name":"s"},"key":"k","prefix":"Bearer\r\nX-Evil: 1 "}`, "config.prefix: the value contains a line break"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseCredential(config{raw: []byte(tc.config)})
			assertRefusal(t, err, tc.wantErr)
		})
	}
}

// assertRefusal checks that err is nil when want is "", else that it mentions want.
func assertRefusal(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Fatalf("refused: %v", err)
	case want != "" && err == nil:
		t.Fatalf("accepted, want an error about %q", want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Fatalf("error %q does not mention %q", err, want)
	}
}
