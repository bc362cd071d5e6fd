package translate

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	matcherv3 "github.com/envoyproxy/go-control-plane/envoy/type/matcher/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// regexCorpus are regular expressions users plausibly write and ones built to be
// expensive for RE2 in ways Go's program hides: wide and negated classes (one Go
// instruction, many UTF-8 byte ranges), case folding, counted repetition of nullable
// and non-ASCII pieces, and alternations.
var regexCorpus = []string{
	`/`, `/abc`, `/api/v[0-9]+/.*`, `/users/[0-9]{1,10}`, `/[a-z]{1,1000}x`, `/[a-z]{1,120}x`,
	`/[a-z]{1,200}`, `.*`, `.+`, `(?s).*`, `.{1,40}`, `.{1,80}`, `.{1,150}`, `(?s).{1,100}`,
	`[^a]{1,60}`, `[^/]+/[^/]+`, `\w+`, `\W{1,30}`, `\d{1,100}`, `\D{1,50}`, `\s*`,
	`\pL{1,10}`, `\pL+`, `\p{Greek}{1,20}`, `\p{Han}+`, `\PL`, `\p{Lu}{1,5}`, `\p{N}`,
	`(?i)/API/v1/users`, `(?i)[a-zé]{1,50}`, `(?i)k{1,100}`, `(?i)ſ{1,40}`, `(?i)straße{1,30}`,
	`é{1,100}`, `😀{1,100}`, `[😀-🙏]{1,60}`, "[\u0080-\U0010FFFF]{1,100}", "[\u0800-\uFFFF]{1,50}",
	"[\u07FF-\u0800]{1,100}", "[\uD7FF-\uE000]{1,40}", "[^\\x00-\U0010FFFE]{1,100}", "[\\x00-\U0010FFFF]{1,100}",
	"(?i)\u212A{1,100}", "(?i)[ſK]{1,50}", `(a|b|c|d|e|f|g|h)+`,
	`(?:a?){100}`, `(?:a?){300}`, `(?:a*){100}`, `(?:a*b*){100}`, `(?:(?:a|b)?){200}`,
	`(a|ab)(c|bcd)(d*)`, `^/(foo|bar|baz)/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`,
	`^/v1/(?P<id>[^/]+)/(items|things)(/.*)?$`, `(x{2,5}){2,5}`, `((a{1,10}){1,10}){1,10}`,
	`(?:[a-c]|[x-z]|é|ü){1,100}`, `\b\w+\b`, `(?m)^a$`, `(?U)a+b*?`, `\Qa.b*c\E{1,100}`,
	`[[:alpha:]]{1,100}`, `[[:^alpha:]]{1,50}`, `[^\x00-\x{10FFFE}]{1,100}`, `(|a)+`, `(a|)+{1,10}`,
	`((((((((((a))))))))))`, `()+`, `(?:){1,1000}`, `\A\z`, `a{1000}`, `a{500}`, `[ab]{1,499}`,
	`(?i)[k-s]{1,100}`, `(?i)\x{212A}{1,100}`, `[^\n]{1,100}`, `[\x00-\x{10FFFF}]{1,100}`,
	`\x{FF}{1,100}`, `\377`, `\400`, `\x{100}`, `\Q\x{100}\E`, `\p{Cn}`, `\P{LC}`, `[\p{^Cn}]`,
	`(?i:(?:\s|😀|Z|[a-zé😀])|(?s:.)){1,80}`, `(?<name>x)`, `(?P<name>x)+`, `[[:word:]]{1,100}`, `[[:^space:]]{1,100}`, `\v\f\a\0\123`,
}

// TestRegexEstimateBoundsEnvoy compiles every corpus regex, and generated ones, in a
// real Envoy with the program-size limit at 0, so Envoy refuses each one and names its
// RE2 program size, and checks that the estimate is never below it: checkRegex is then
// at least as strict as Envoy. REGEX_RANDOM=n tries n generated regexes instead of 100
// (3,000 were tried when the estimate was written).
func TestRegexEstimateBoundsEnvoy(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	n := 100
	if s := os.Getenv("REGEX_RANDOM"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	measured := 0
	for _, pattern := range append(slices.Clone(regexCorpus), randomRegexes(n, 1)...) {
		est, err := re2SizeBound(pattern)
		if err != nil || checkRE2Escapes(pattern) != nil {
			continue // refused before its size matters
		}
		measured++
		t.Run(pattern, func(t *testing.T) {
			t.Parallel()
			actual := envoyProgramSize(t, envoy, pattern)
			t.Logf("estimate %d, RE2 program size %d", est, actual)
			if est < actual {
				t.Errorf("estimate %d is below RE2's program size %d", est, actual)
			}
		})
	}
	if measured < n/2 {
		t.Fatalf("only %d regexes reached the size check; the corpus no longer exercises it", measured)
	}
}

// TestRegexCheckAgainstEnvoy sends every corpus and generated regex that checkRegex
// accepts, as path, header and query parameter matches, to a real Envoy with
// Portcullis's own bootstrap (and so its program-size limit), which must accept them
// all; and each kind of refusal to Envoy on its own, which must refuse it too.
func TestRegexCheckAgainstEnvoy(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	var accepted []string
	refused := 0
	for _, p := range append(slices.Clone(regexCorpus), randomRegexes(300, 2)...) {
		if checkRegex(p) == nil {
			accepted = append(accepted, p)
		} else {
			refused++
		}
	}
	if len(accepted) < 200 || refused < 10 {
		t.Fatalf("the inputs should hold both kinds: %d accepted, %d refused", len(accepted), refused)
	}
	if out, err := envoyValidate(t, envoy, regexBootstrap(t, accepted, nil)); err != nil {
		t.Fatalf("Envoy refused a regex checkRegex accepts: %v\n%s", err, out)
	}
	for _, p := range []string{`/[a-z]{1,1000}x`, `a{1000}`, `(?:a?){600}`, `/(unclosed`, `\x{100}`, `\400`, `\p{Cn}`, `\P{LC}`, `(?i:(?:\s|😀|Z|[a-zé😀])|(?s:.)){1,80}`} {
		if checkRegex(p) == nil {
			t.Errorf("checkRegex accepts %q", p)
		}
		if out, err := envoyValidate(t, envoy, regexBootstrap(t, []string{p}, nil)); err == nil {
			t.Errorf("Envoy accepts %q, which checkRegex refuses: the refusal is stale\n%s", p, out)
		}
	}
}

// TestRegexUnicodeClassesAgainstEnvoy tries every Unicode class name Go knows: Envoy
// must accept each one checkRegex lets through.
func TestRegexUnicodeClassesAgainstEnvoy(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	names := append(slices.Collect(maps.Keys(unicode.Scripts)), slices.Collect(maps.Keys(unicode.Categories))...)
	var patterns []string
	for _, n := range append(names, "Any") {
		for _, p := range []string{`\p{` + n + `}`, `[\P{^` + n + `}]`} {
			if checkRE2Escapes(p) == nil {
				patterns = append(patterns, p)
			}
		}
	}
	slices.Sort(patterns)
	if out, err := envoyValidate(t, envoy, regexBootstrap(t, patterns, nil)); err != nil {
		t.Fatalf("Envoy refused a Unicode class checkRegex accepts: %v\n%s", err, out)
	}
}

var envoySizeMessage = regexp.MustCompile(`RE2 program size of (\d+) >`)

// envoyProgramSize asks Envoy for the RE2 program size of a pattern.
func envoyProgramSize(t *testing.T, envoy, pattern string) int {
	t.Helper()
	out, err := envoyValidate(t, envoy, regexBootstrap(t, []string{pattern}, structpb.NewNumberValue(0)))
	m := envoySizeMessage.FindSubmatch(out)
	if err == nil || m == nil {
		t.Fatalf("Envoy did not report a program size (err %v):\n%s", err, out)
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// regexBootstrap is Portcullis's Envoy bootstrap plus a static listener whose routes use
// each pattern as a path, header and query parameter regex. limit, when set, overrides
// the program-size limit.
func regexBootstrap(t *testing.T, patterns []string, limit *structpb.Value) *bootstrapv3.Bootstrap {
	t.Helper()
	bs, err := bootstrap.Build(bootstrap.Options{Gateway: "test/regex", NodeID: "regex", XDSAddress: "127.0.0.1", XDSPort: 18000, AdminPort: 19000})
	if err != nil {
		t.Fatal(err)
	}
	if limit != nil {
		static := bs.LayeredRuntime.Layers[0].GetStaticLayer()
		static.Fields["re2.max_program_size.error_level"] = limit
	}
	var routes []*routev3.Route
	for _, p := range patterns {
		re := func() *matcherv3.StringMatcher {
			return &matcherv3.StringMatcher{MatchPattern: &matcherv3.StringMatcher_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: p}}}
		}
		routes = append(routes, &routev3.Route{
			Match: &routev3.RouteMatch{
				PathSpecifier:   &routev3.RouteMatch_SafeRegex{SafeRegex: &matcherv3.RegexMatcher{Regex: p}},
				Headers:         []*routev3.HeaderMatcher{{Name: "x-test", HeaderMatchSpecifier: &routev3.HeaderMatcher_StringMatch{StringMatch: re()}}},
				QueryParameters: []*routev3.QueryParameterMatcher{{Name: "q", QueryParameterMatchSpecifier: &routev3.QueryParameterMatcher_StringMatch{StringMatch: re()}}},
			},
			Action: &routev3.Route_DirectResponse{DirectResponse: &routev3.DirectResponseAction{Status: 200}},
		})
	}
	hcm := &hcmv3.HttpConnectionManager{
		StatPrefix:     "regex",
		RouteSpecifier: &hcmv3.HttpConnectionManager_RouteConfig{RouteConfig: &routev3.RouteConfiguration{Name: "regex", VirtualHosts: []*routev3.VirtualHost{{Name: "all", Domains: []string{"*"}, Routes: routes}}}},
		HttpFilters:    []*hcmv3.HttpFilter{{Name: "envoy.filters.http.router", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})}}},
	}
	bs.StaticResources.Listeners = append(bs.StaticResources.Listeners, &listenerv3.Listener{
		Name:         "regex",
		Address:      &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{Address: "127.0.0.1", PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: 10000}}}},
		FilterChains: []*listenerv3.FilterChain{{Filters: []*listenerv3.Filter{{Name: "envoy.filters.network.http_connection_manager", ConfigType: &listenerv3.Filter_TypedConfig{TypedConfig: mustAny(t, hcm)}}}}},
	})
	return bs
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// envoyValidate runs `envoy --mode validate` on the bootstrap.
func envoyValidate(t *testing.T, envoy string, bs *bootstrapv3.Bootstrap) ([]byte, error) {
	t.Helper()
	j, err := protojson.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bootstrap.json")
	if err := os.WriteFile(path, j, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(envoy, "--mode", "validate", "-c", path, "--log-level", "error", "--disable-hot-restart")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.Bytes(), err
}

// randomRegexes generates n regular expressions from a small grammar with a fixed seed:
// literals (ASCII, Latin-1, multi-byte), classes (narrow, negated, Perl, POSIX,
// Unicode), any-char, anchors, groups, alternations, case folding and every kind of
// repetition, nested.
func randomRegexes(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	atoms := []string{"a", "Z", "/", "-", `\.`, "é", "ß", "Ω", "😀", "k", "s", "[a-z]", "[^a]", "[^/]", "[0-9a-f]",
		`\d`, `\w`, `\s`, `\W`, ".", "(?s:.)", "[[:alpha:]]", `\pN`, "[é-ü]", "[a-zé😀]", "[^\n]", `\x41`, `\xff`, `\b`, "^", "$"}
	var gen func(depth int) string
	gen = func(depth int) string {
		switch k := r.IntN(10); {
		case depth > 3 || k < 3:
			return atoms[r.IntN(len(atoms))]
		case k < 5:
			parts := make([]string, 1+r.IntN(4))
			for i := range parts {
				parts[i] = gen(depth + 1)
			}
			return strings.Join(parts, "")
		case k < 7:
			parts := make([]string, 2+r.IntN(3))
			for i := range parts {
				parts[i] = gen(depth + 1)
			}
			return "(?:" + strings.Join(parts, "|") + ")"
		case k < 8:
			return "(?i:" + gen(depth+1) + ")"
		default:
			reps := []string{"*", "+", "?", "*?", "{2}", "{0,3}", "{1,8}", "{3,}", "{2,20}"}
			return "(?:" + gen(depth+1) + ")" + reps[r.IntN(len(reps))]
		}
	}
	out := make([]string, 0, n)
	for len(out) < n {
		p := gen(0)
		if size, err := re2SizeBound(p); err == nil && size <= 3*ir.MaxRegexProgramSize {
			out = append(out, p)
		}
	}
	return out
}
