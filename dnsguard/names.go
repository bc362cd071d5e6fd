package dnsguard

import (
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
)

// builtinRefusedSuffixes are the suffixes the Backend CRD's CEL refuses (api/v1alpha1,
// destination_types.go): reserved, local-only and cluster-internal names.
var builtinRefusedSuffixes = []string{
	"localhost", "local", "internal", "localdomain", "home.arpa",
	"cluster.local", "svc", "in-addr.arpa", "ip6.arpa",
}

const maxNameLength = 253

// NamePolicy decides which names the guard may resolve. It is compiled once and safe
// for concurrent use.
type NamePolicy struct {
	// suffixes, longest first, so a name is reported under its most specific suffix.
	suffixes []refusedSuffix
}

type refusedSuffix struct {
	suffix string // lowercase, no leading or trailing dot
	origin string // "" for built-in, else the flag that added it
}

// NewNamePolicy compiles the built-in refused suffixes, clusterDomain and the admin's
// denySuffixes (leading and trailing dots tolerated, case-insensitive).
func NewNamePolicy(clusterDomain string, denySuffixes []string) (*NamePolicy, error) {
	p := &NamePolicy{}
	seen := map[string]bool{}
	add := func(s, origin string) {
		if !seen[s] {
			seen[s] = true
			p.suffixes = append(p.suffixes, refusedSuffix{suffix: s, origin: origin})
		}
	}
	for _, s := range builtinRefusedSuffixes {
		add(s, "")
	}
	var errs []error
	cd, err := normalizeSuffix(clusterDomain)
	if err != nil {
		errs = append(errs, fmt.Errorf("--cluster-domain %q: %w", clusterDomain, err))
	} else {
		add(cd, "cluster domain")
	}
	for _, raw := range denySuffixes {
		s, err := normalizeSuffix(raw)
		if err != nil {
			errs = append(errs, fmt.Errorf("--deny-name-suffix %q: %w", raw, err))
			continue
		}
		add(s, "--deny-name-suffix")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(p.suffixes, func(i, j int) bool { return len(p.suffixes[i].suffix) > len(p.suffixes[j].suffix) })
	return p, nil
}

// CheckName reports whether name may be resolved and, if not, why. The check is
// case-insensitive and tolerates one trailing dot.
func (p *NamePolicy) CheckName(name string) (ok bool, reason string) {
	n := NormalizeName(name)
	if n == "" {
		return false, "empty name"
	}
	if isIPLiteral(n) {
		return false, "IP address literal (names only; use an IP destination)"
	}
	if s, found := p.refusedSuffixOf(n); found {
		return false, s.describe(n)
	}
	if len(n) > maxNameLength {
		return false, fmt.Sprintf("longer than %d characters", maxNameLength)
	}
	if strings.Contains(n, "*") {
		return false, "wildcard names are not resolvable"
	}
	labels := strings.Split(n, ".")
	for _, l := range labels {
		if msg := checkLabel(l); msg != "" {
			return false, "invalid RFC 1123 name: " + msg
		}
	}
	if len(labels) < 2 {
		return false, "single-label name (want a fully qualified name such as api.example.com)"
	}
	return true, ""
}

func (p *NamePolicy) refusedSuffixOf(n string) (refusedSuffix, bool) {
	for _, s := range p.suffixes {
		if n == s.suffix || strings.HasSuffix(n, "."+s.suffix) {
			return s, true
		}
	}
	return refusedSuffix{}, false
}

func (s refusedSuffix) describe(n string) string {
	msg := "under refused suffix ." + s.suffix
	if n == s.suffix {
		msg = "refused name " + s.suffix
	}
	if s.origin != "" {
		msg += " (" + s.origin + ")"
	}
	return msg
}

// NormalizeName lowercases ASCII letters and removes one trailing dot; it is the key
// form of a name in egress.Addresses. Other bytes are kept, so a name with non-ASCII
// characters stays invalid rather than being folded onto an ASCII name.
func NormalizeName(name string) string {
	name = strings.TrimSuffix(name, ".")
	b := []byte(name)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b)
}

// isIPLiteral reports whether n (normalized) is an IP address in any spelling a
// resolver library would accept: IPv6 (bracketed or not, with or without a zone) and
// every inet_aton form, whose last label is decimal, octal or hex (127.1, 2130706433,
// 0x7f000001, 017700000001). Like the CRD, any name whose last label is all digits
// or 0x-hex is refused.
func isIPLiteral(n string) bool {
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(n, "["), "]")); err == nil {
		return true
	}
	last := n[strings.LastIndexByte(n, '.')+1:]
	if strings.HasPrefix(last, "0x") {
		return strings.Trim(last[2:], "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// checkLabel returns why l is not an RFC 1123 label, or "".
func checkLabel(l string) string {
	switch {
	case l == "":
		return "empty label"
	case len(l) > 63:
		return fmt.Sprintf("label %.20q... longer than 63 characters", l)
	case l[0] == '-' || l[len(l)-1] == '-':
		return fmt.Sprintf("label %q starts or ends with '-'", l)
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return fmt.Sprintf("invalid character %q in label %q (allowed: a-z, 0-9, '-')", c, l)
		}
	}
	return ""
}

// normalizeSuffix validates a configured suffix: RFC 1123 labels, one label allowed.
func normalizeSuffix(raw string) (string, error) {
	s := NormalizeName(strings.TrimPrefix(strings.TrimSpace(raw), "."))
	if s == "" {
		return "", errors.New("empty DNS suffix")
	}
	if len(s) > maxNameLength {
		return "", fmt.Errorf("longer than %d characters", maxNameLength)
	}
	for _, l := range strings.Split(s, ".") {
		if msg := checkLabel(l); msg != "" {
			return "", fmt.Errorf("not a DNS suffix: %s", msg)
		}
	}
	return s, nil
}
