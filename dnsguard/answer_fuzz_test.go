package dnsguard

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/miekg/dns"

	"github.com/portcullis-io/portcullis/egress"
)

// offlineResolver is a Resolver whose every query is answered by answer (no network).
func offlineResolver(t testing.TB, answer func(name string, qtype uint16) (*dns.Msg, error)) *Resolver {
	t.Helper()
	cfg := DefaultConfig()
	cfg.DNSServers = []string{"127.0.0.1:1"}
	cfg.ClusterCIDRs = []string{"10.96.0.0/12"}
	cfg.DenyCIDRs = []string{"93.184.216.0/24"}
	cfg.AllowCIDRs = []string{"10.20.0.0/16"}
	r := newTestResolver(t, cfg)
	r.query = func(_ context.Context, name string, qtype uint16) (*dns.Msg, error) { return answer(name, qtype) }
	return r
}

func packSeed(t testing.TB, rcode int, records ...string) []byte {
	m := new(dns.Msg)
	m.SetQuestion("api.example.com.", dns.TypeA)
	m.Response = true
	m.Rcode = rcode
	for _, rec := range records {
		rr, err := dns.NewRR(rec)
		if err != nil {
			t.Fatalf("seed %q: %v", rec, err)
		}
		m.Answer = append(m.Answer, rr)
	}
	b, err := m.Pack()
	if err != nil {
		t.Fatalf("pack seed: %v", err)
	}
	return b
}

// FuzzParseAnswer feeds arbitrary bytes to the resolver as the answer to every query:
// it must never panic and never vet an address the policy refuses or reached through a
// refused name.
func FuzzParseAnswer(f *testing.F) {
	seeds := [][]string{
		{"api.example.com. 60 IN A 8.8.8.8"},
		{"api.example.com. 60 IN A 10.0.0.1", "api.example.com. 60 IN A 8.8.4.4", "api.example.com. 60 IN AAAA ::1"},
		{"api.example.com. 60 IN CNAME x.cluster.local.", "x.cluster.local. 60 IN A 8.8.8.8"},
		{"api.example.com. 60 IN CNAME edge.example.net.", "edge.example.net. 60 IN A 1.1.1.1", "edge.example.net. 60 IN AAAA 64:ff9b::a9fe:a9fe"},
		{"api.example.com. 60 IN CNAME api.example.com."},
		{"api.example.com. 60 IN CNAME a.example.net.", "a.example.net. 60 IN CNAME api.example.com."},
		{"other.example.com. 60 IN A 8.8.8.8", "api.example.com. 60 CH A 8.8.8.8"},
		{"api.example.com. 60 IN A 10.20.1.1", "api.example.com. 60 IN A 10.96.0.1", "api.example.com. 60 IN A 93.184.216.34"},
		{"api.example.com. 60 IN CNAME 127.0.0.1.", "127.0.0.1. 60 IN A 8.8.8.8"},
		{"api.example.com. 2147483648 IN AAAA ::ffff:8.8.8.8"},
	}
	for _, s := range seeds {
		f.Add(packSeed(f, dns.RcodeSuccess, s...))
	}
	f.Add(packSeed(f, dns.RcodeNameError, "api.example.com. 60 IN CNAME x.svc."))
	f.Add([]byte{0, 0, 0x81, 0x80, 0, 1, 0, 1, 0, 0, 0, 0})

	var current atomic.Pointer[dns.Msg]
	r := offlineResolver(f, func(string, uint16) (*dns.Msg, error) {
		m := current.Load()
		if m.Rcode != dns.RcodeSuccess && m.Rcode != dns.RcodeNameError {
			return nil, errors.New(rcodeName(m.Rcode))
		}
		return m, nil
	})
	f.Fuzz(func(t *testing.T, data []byte) {
		m := new(dns.Msg)
		if err := m.Unpack(data); err != nil {
			return
		}
		current.Store(m)
		res := r.Resolve(context.Background(), "api.example.com")
		assertNothingForbiddenVetted(t, r, res)
		if res.TTL != 0 && (res.TTL < r.minTTL || res.TTL > r.maxTTL) {
			t.Fatalf("TTL %v outside [%v, %v]", res.TTL, r.minTTL, r.maxTTL)
		}
		if res.State == egress.ResolutionForbiddenName && len(res.Blocked) > 0 {
			t.Fatalf("ForbiddenName with blocked addresses %v", res.Blocked)
		}
		if len(res.Chain) > MaxCNAMEHops {
			t.Fatalf("chain of %d hops: %v", len(res.Chain), res.Chain)
		}
	})
}

// TestFollowChainAcrossQueries drives the chain walk with one hop per answer: a refused
// target found on a later query still refuses the name.
func TestFollowChainAcrossQueries(t *testing.T) {
	answers := map[string][]string{
		"api.example.com.":  {"api.example.com. 60 IN CNAME hop.example.net."},
		"hop.example.net.":  {"hop.example.net. 60 IN CNAME evil.svc."},
		"safe.example.com.": {"safe.example.com. 60 IN CNAME end.example.net."},
		"end.example.net.":  {"end.example.net. 60 IN A 8.8.8.8", "end.example.net. 60 IN AAAA 2001:4860:4860::8888"},
	}
	r := offlineResolver(t, func(name string, qtype uint16) (*dns.Msg, error) {
		m := new(dns.Msg)
		m.SetQuestion(name+".", qtype)
		m.Response = true
		for _, rec := range answers[name+"."] {
			rr, _ := dns.NewRR(rec)
			m.Answer = append(m.Answer, rr)
		}
		if len(m.Answer) == 0 {
			return nil, fmt.Errorf("unexpected query %s", name)
		}
		return m, nil
	})
	res := r.Resolve(context.Background(), "api.example.com")
	if res.State != egress.ResolutionForbiddenName || res.Message != "CNAME target evil.svc is refused: under refused suffix .svc" {
		t.Errorf("got %s %q", res.State, res.Message)
	}
	res = r.Resolve(context.Background(), "safe.example.com")
	if res.State != egress.ResolutionResolved || len(res.Vetted) != 2 {
		t.Errorf("got %s %v %q", res.State, res.Vetted, res.Message)
	}
}
