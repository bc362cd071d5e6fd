package dnstest

import (
	"errors"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func ask(t *testing.T, network, addr, name string, qtype uint16) (*dns.Msg, error) {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	c := &dns.Client{Net: network, Timeout: 200 * time.Millisecond}
	r, _, err := c.Exchange(q, addr)
	return r, err
}

func TestServerSetFiltersByType(t *testing.T) {
	s := NewServer(t)
	s.Set("api.example.com", "api.example.com. 60 IN CNAME edge.example.net.", "edge.example.net. 60 IN A 192.0.2.1", "edge.example.net. 60 IN AAAA 2001:db8::1")
	r, err := ask(t, "udp", s.Addr(), "API.example.com", dns.TypeA)
	if err != nil {
		t.Fatal(err)
	}
	var types []uint16
	for _, rr := range r.Answer {
		types = append(types, rr.Header().Rrtype)
	}
	if !slices.Equal(types, []uint16{dns.TypeCNAME, dns.TypeA}) || r.Rcode != dns.RcodeSuccess {
		t.Errorf("answer types %v rcode %d, want CNAME and A", types, r.Rcode)
	}
	if r, _ := ask(t, "udp", s.Addr(), "unknown.example.com", dns.TypeA); r == nil || r.Rcode != dns.RcodeNameError {
		t.Errorf("an unscripted name: %v, want NXDOMAIN", r)
	}
	if got := s.Queries("api.example.com."); got != 1 {
		t.Errorf("Queries = %d, want 1", got)
	}
}

func TestServerScriptCountsPerTypeAndTransport(t *testing.T) {
	s := NewServer(t)
	s.Script("n.example.com",
		Response{Answer: []string{"n.example.com. 60 IN A 192.0.2.1"}},
		Response{Rcode: dns.RcodeServerFailure})
	for i, want := range []int{dns.RcodeSuccess, dns.RcodeServerFailure, dns.RcodeServerFailure} {
		r, err := ask(t, "udp", s.Addr(), "n.example.com", dns.TypeA)
		if err != nil || r.Rcode != want {
			t.Fatalf("A query %d: %v %v, want rcode %d", i, r, err, want)
		}
	}
	if r, err := ask(t, "udp", s.Addr(), "n.example.com", dns.TypeAAAA); err != nil || r.Rcode != dns.RcodeSuccess {
		t.Errorf("first AAAA query: %v %v, want the first response", r, err)
	}
	if r, err := ask(t, "tcp", s.Addr(), "n.example.com", dns.TypeA); err != nil || r.Rcode != dns.RcodeSuccess || len(r.Answer) != 1 {
		t.Errorf("first TCP query: %v %v, want the first response", r, err)
	}
}

func TestServerTruncateDropAndRaw(t *testing.T) {
	s := NewServer(t)
	s.Script("tc.example.com", Response{Truncate: true, Answer: []string{"tc.example.com. 60 IN A 192.0.2.1"}})
	s.Script("drop.example.com", Response{Drop: true})
	s.Script("raw.example.com", Response{Raw: func(*dns.Msg) []byte { return []byte{1, 2, 3} }})
	r, err := ask(t, "udp", s.Addr(), "tc.example.com", dns.TypeA)
	if err != nil || !r.Truncated || len(r.Answer) != 0 {
		t.Errorf("UDP: %v %v, want TC and no answer", r, err)
	}
	r, err = ask(t, "tcp", s.Addr(), "tc.example.com", dns.TypeA)
	if err != nil || r.Truncated || len(r.Answer) != 1 {
		t.Errorf("TCP: %v %v, want the full answer", r, err)
	}
	var ne net.Error
	if _, err := ask(t, "udp", s.Addr(), "drop.example.com", dns.TypeA); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("dropped query: %v, want a timeout", err)
	}
	if _, err := ask(t, "udp", s.Addr(), "raw.example.com", dns.TypeA); err == nil {
		t.Error("3 raw bytes parsed as a DNS message")
	}
	log := s.Log()
	if len(log) != 4 || log[1].Net != "tcp" || log[0].Name != "tc.example.com." {
		t.Errorf("log = %+v", log)
	}
}

func TestServerTruncatesLargeUDPAnswers(t *testing.T) {
	s := NewServer(t)
	var recs []string
	for i := range 100 {
		recs = append(recs, "big.example.com. 60 IN A 192.0.2."+strconv.Itoa(i))
	}
	s.Set("big.example.com", recs...)
	r, err := ask(t, "udp", s.Addr(), "big.example.com", dns.TypeA)
	if err != nil || !r.Truncated {
		t.Errorf("100 records over 512-byte UDP: %v, want truncated", err)
	}
	r, err = ask(t, "tcp", s.Addr(), "big.example.com", dns.TypeA)
	if err != nil || len(r.Answer) != 100 {
		t.Errorf("over TCP: %v, %d records", err, len(r.Answer))
	}
}

func TestBlackholeAndClosedAddr(t *testing.T) {
	var ne net.Error
	if _, err := ask(t, "udp", NewBlackhole(t), "a.example.com", dns.TypeA); !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("blackhole: %v, want a timeout", err)
	}
	if _, err := ask(t, "udp", ClosedAddr(t), "a.example.com", dns.TypeA); err == nil {
		t.Error("closed address answered")
	}
}
