package main

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestAnswersItsNamesOnlyAndRereadsTheFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "records")
	write := func(content string, mtime time.Time) {
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(file, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	write("# comment\nAPI.partner.example 11.22.33.44 2001:db8::1  # trailing\n", time.Unix(1000, 0))
	addr := serve(t, &zone{path: file, ttl: 5})

	tests := []struct {
		name      string
		qtype     uint16
		wantRcode int
		want      []string
	}{
		{"api.partner.example.", dns.TypeA, dns.RcodeSuccess, []string{"11.22.33.44"}},
		{"api.partner.example.", dns.TypeAAAA, dns.RcodeSuccess, []string{"2001:db8::1"}},
		{"example.com.", dns.TypeA, dns.RcodeNameError, nil},
	}
	for _, tt := range tests {
		rcode, got := query(t, addr, tt.name, tt.qtype)
		if rcode != tt.wantRcode || !slices.Equal(got, tt.want) {
			t.Errorf("%s %s: rcode %d answers %v, want %d %v", tt.name, dns.TypeToString[tt.qtype], rcode, got, tt.wantRcode, tt.want)
		}
	}

	write("api.partner.example 11.22.33.55\n", time.Unix(2000, 0))
	if _, got := query(t, addr, "api.partner.example.", dns.TypeA); !slices.Equal(got, []string{"11.22.33.55"}) {
		t.Fatalf("after the file changed: %v, want 11.22.33.55", got)
	}
	write("api.partner.example not-an-address\n", time.Unix(3000, 0))
	if _, got := query(t, addr, "api.partner.example.", dns.TypeA); !slices.Equal(got, []string{"11.22.33.55"}) {
		t.Fatalf("after a broken file: %v, want the previous records kept", got)
	}
}

func serve(t *testing.T, z *zone) string {
	t.Helper()
	if err := z.reload(); err != nil {
		t.Fatal(err)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &dns.Server{PacketConn: pc, Handler: z}
	go func() { _ = srv.ActivateAndServe() }()
	t.Cleanup(func() { _ = srv.Shutdown() })
	return pc.LocalAddr().String()
}

func query(t *testing.T, addr, name string, qtype uint16) (int, []string) {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, rr := range r.Answer {
		switch rr := rr.(type) {
		case *dns.A:
			out = append(out, rr.A.String())
		case *dns.AAAA:
			out = append(out, rr.AAAA.String())
		}
	}
	return r.Rcode, out
}
