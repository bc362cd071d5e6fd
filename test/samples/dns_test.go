package samples

import (
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
)

// loopback is what the test's DNS server answers for every outside name of the samples:
// the guard runs with 127.0.0.0/8 allowed (test only), so these names resolve to a
// vetted address as real public names would.
const loopback = "127.0.0.1"

// answerSampleNames makes the DNS server answer every name the samples' Backends and
// ExternalName Services use. A nip.io-style name (<IPv4>.nip.io) gets the address it
// spells, as the public service answers it; every other name gets 127.0.0.1. It returns
// the names and their answers.
func answerSampleNames(dns *dnstest.Server, samples []*sample) map[string]string {
	answers := map[string]string{}
	for _, s := range samples {
		for _, name := range outsideNames(s) {
			answers[name] = answerFor(name)
		}
	}
	names := make([]string, 0, len(answers))
	for n := range answers {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		dns.Set(n, n+". 60 IN A "+answers[n])
	}
	return answers
}

func answerFor(name string) string {
	if ip, ok := strings.CutSuffix(name, ".nip.io"); ok {
		if a, err := netip.ParseAddr(ip); err == nil && a.Is4() {
			return a.String()
		}
	}
	return loopback
}

// outsideNames are the names the DNS guard resolves for a sample.
func outsideNames(s *sample) []string {
	var out []string
	for _, b := range s.objectsOf("Backend") {
		if h, _, _ := unstructured.NestedString(b.Object, "spec", "destination", "fqdn", "hostname"); h != "" {
			out = append(out, h)
		}
	}
	for _, svc := range s.objectsOf("Service") {
		if h, _, _ := unstructured.NestedString(svc.Object, "spec", "externalName"); h != "" {
			out = append(out, h)
		}
	}
	return out
}
