package translate

import (
	"net/netip"
	"slices"
	"testing"

	"sigs.k8s.io/randfill"

	"github.com/portcullis-io/portcullis/egress"
)

// vocabulary makes random objects refer to each other: names, kinds, groups and protocol
// values are drawn from a small set, so references resolve often enough to reach deep code.
var vocabulary = []string{
	"", "a", "b", "apps", "gw", "egress", "portcullis", "Service", "Backend", "Gateway", "HTTPRoute", "Secret", "ConfigMap",
	"egress.portcullis.io", "gateway.networking.k8s.io", "portcullis.io/gateway-controller",
	"HTTP", "HTTPS", "TLS", "TCP", "FQDN", "IP", "1.2", "1.3", "System", "Hostname", "URI",
	"/", "/v1", "Exact", "PathPrefix", "RegularExpression", "(", "*", "*.example.com", "api.example.com",
	"kubernetes.io/tls", "ca.crt", "tls.crt", "tls.key", "10.0.0.1", "203.0.113.7", "::1", "ExternalName",
	"HTTP2", "GRPC", "MCP", "WebSocket", "portcullis.io/connection-pool", "portcullis.io/credential-injection",
	"portcullis.io/circuit-breaker", "portcullis.io/request-header-modifier", "RequestHeaderModifier", "URLRewrite",
	"RequestRedirect", "ReplaceFullPath", "ReplacePrefixMatch", "Same", "All", "Selector", "Terminate", "Passthrough",
	MinTLSVersionOption, "kubernetes.io/service-name", ForwardProxyAnnotation, "a,b", "Pod", "TLSRoute", "TCPRoute",
}

// FuzzTranslate checks that no Resources, however odd, make Translate panic, and that
// translation stays deterministic.
func FuzzTranslate(f *testing.F) {
	for seed := int64(0); seed < 40; seed++ {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		res := randomResources(seed)
		addrs := egress.Addresses{"api.example.com": {State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.9")}}}}
		opts := Options{AddressPolicy: prefixPolicy{netip.MustParsePrefix("10.0.0.0/8")}}
		first := renderResult(t, Translate(res, addrs, opts))
		second := renderResult(t, Translate(res, addrs, opts))
		if string(first) != string(second) {
			t.Fatal("translation is not deterministic")
		}
	})
}

// translateVocabulary is vocabulary with the words of XBackends (its kind and group,
// type, TLS modes, protocols), which every list of Resources, XBackends included, is
// filled from. vocabulary itself stays as it is: the tenant fuzz target's saved inputs
// draw from it.
var translateVocabulary = append(slices.Clone(vocabulary),
	"XBackend", "gateway.networking.x-k8s.io", "ExternalHostname", "None", "ServerOnly", "ClientAndServer", "H2C", "HTTP11", "api.svc")

func randomResources(seed int64) *egress.Resources {
	res := &egress.Resources{}
	randfill.NewWithSeed(seed).NilChance(0.3).NumElements(0, 4).Funcs(
		func(s *string, c randfill.Continue) { *s = translateVocabulary[c.Intn(len(translateVocabulary))] },
	).Fill(res)
	return res
}

// TestFuzzTranslateFillsXBackends: FuzzTranslate's inputs hold XBackends, with the
// words of their fields. (Random objects seldom reach a Gateway: FuzzXBackend, in
// xbackend_fuzz_test.go, fuzzes XBackends that a route uses.)
func TestFuzzTranslateFillsXBackends(t *testing.T) {
	filled := 0
	for seed := int64(0); seed < 40; seed++ {
		for _, x := range randomResources(seed).XBackends {
			if x.Spec.TLS != nil && x.Spec.TLS.Mode != "" {
				filled++
			}
		}
	}
	if filled == 0 {
		t.Fatal("no seed of FuzzTranslate holds an XBackend with a TLS mode")
	}
}
