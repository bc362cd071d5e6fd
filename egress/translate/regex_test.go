package translate

import "testing"

func TestCheckRegex(t *testing.T) {
	cases := []struct {
		name, pattern string
		wantErr       string // a part of the message; "" means accepted
	}{
		{"a plain path", `/api/v[0-9]+/users/[^/]+`, ""},
		{"a UUID", `^/items/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`, ""},
		{"case folding and named groups", `(?i)/(?P<v>v1|v2)/.*`, ""},
		{"a counted class below the limit", `/[a-z]{1,120}x`, ""},
		{"an escape up to FF", `\x{FF}\377`, ""},
		{"escapes inside quoting are literal", `\Q\x{100}\400\E`, ""},
		{"empty", ``, "empty"},
		{"unclosed group", `/(unclosed`, "missing closing )"},
		{"nested repetition", `a**`, "invalid nested repetition"},
		{"a counted class over the limit", `/[a-z]{1,1000}x`, "too large"},
		{"many any-chars", `.{1,150}`, "too large"},
		{"a long literal run", `a{1000}`, "too large"},
		{"a wide Unicode class", `\pL`, "too large"},
		{"a hex escape above FF", `\x{100}`, `\x{100}`},
		{"an octal escape above 377", `a\400`, `\400`},
		{"a Unicode class RE2 lacks", `\p{Cn}`, "Unicode class Cn"},
		{"a negated one in a class", `[\P{^LC}]`, "Unicode class LC"},
		{"a multi-byte emoji repeated", "😀{1,300}", "too large"},
		{"an emoji class Go merges and Latin-1 does not", "(?:[a😀]|b){1,150}", "too large"},
		// 723 read as UTF-8, 1283 in Envoy, which reads it byte by byte: only the Latin-1
		// reading refuses it.
		{"an emoji alternation under case folding", `(?i:(?:\s|😀|Z|[a-zé😀])|(?s:.)){1,80}`, "too large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertRefusal(t, checkRegex(tc.pattern), tc.wantErr)
		})
	}
}

// TestUTF8ByteRanges pins the UTF-8 splitting against hand-counted encodings.
func TestUTF8ByteRanges(t *testing.T) {
	cases := []struct {
		lo, hi rune
		want   int
	}{
		{'a', 'z', 1},
		{0, 0x7f, 1},
		{0x80, 0x7ff, 2},          // C2-DF 80-BF
		{0x80, 0x10ffff, 6},       // RE2's hand-factored range
		{0x800, 0xffff, 6},        // E0 A0-BF 80-BF | E1-EF 80-BF 80-BF
		{0x7ff, 0x800, 5},         // DF BF | E0 A0 80
		{'a', 0xe9, 1 + 2 + 2},    // a-7F | C2 80-BF | C3 80-A9
		{0x1f600, 0x1f64f, 4 + 4}, // F0 9F 98 80-BF | F0 9F 99 80-8F
	}
	for _, tc := range cases {
		if got := utf8ByteRanges(tc.lo, tc.hi); got != tc.want {
			t.Errorf("utf8ByteRanges(%#x, %#x) = %d, want %d", tc.lo, tc.hi, got, tc.want)
		}
	}
}
