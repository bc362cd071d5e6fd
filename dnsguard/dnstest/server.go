// Package dnstest runs a scriptable, optionally hostile DNS server on 127.0.0.1 for
// tests: per name and per query count it answers, lies, truncates, fails or stays
// silent, over UDP and TCP on the same port.
package dnstest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Response scripts one answer.
type Response struct {
	// Rcode is the response code (dns.RcodeSuccess by default).
	Rcode int
	// Answer, Ns and Extra are records in zone-file syntax, e.g.
	// "api.example.com. 60 IN A 203.0.113.7". The answer section keeps only records of
	// the asked type and CNAMEs, as a real server would, unless AnyType is set.
	Answer []string
	Ns     []string
	Extra  []string
	// AnyType serves Answer as written whatever the question's type.
	AnyType bool
	// Truncate answers over UDP with the TC bit and no records; TCP gets the full answer.
	Truncate bool
	// Drop never answers (the client times out).
	Drop bool
	// Delay waits before answering.
	Delay time.Duration
	// Mutate edits the finished message (its ID, question, flags...) before it is sent.
	Mutate func(*dns.Msg)
	// Raw, when set, is sent as the whole reply instead of a packed message; it is
	// called with the query.
	Raw func(query *dns.Msg) []byte
}

// Query is one question the server received.
type Query struct {
	Name string // lowercase, fully qualified
	Type uint16
	Net  string // "udp" or "tcp"
}

// Server is a scripted DNS server. Names never scripted get NXDOMAIN.
type Server struct {
	t    testing.TB
	addr string
	udp  *dns.Server
	tcp  *dns.Server

	mu      sync.Mutex
	scripts map[string][]Response
	counts  map[countKey]int
	log     []Query
}

type countKey struct {
	name  string
	qtype uint16
	net   string
}

// NewServer starts a server on 127.0.0.1 (UDP and TCP, same port) and stops it in
// t.Cleanup.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{t: t, scripts: map[string][]Response{}, counts: map[countKey]int{}}
	pc, ln := listenPair(t)
	s.addr = pc.LocalAddr().String()
	s.udp = &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(s.serve)}
	s.tcp = &dns.Server{Listener: ln, Handler: dns.HandlerFunc(s.serve)}
	startServer(t, s.udp)
	startServer(t, s.tcp)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.udp.ShutdownContext(ctx)
		_ = s.tcp.ShutdownContext(ctx)
	})
	return s
}

// listenPair binds UDP and TCP on the same free 127.0.0.1 port.
func listenPair(t testing.TB) (net.PacketConn, net.Listener) {
	t.Helper()
	var lastErr error
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("dnstest: listen udp: %v", err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		lastErr = err
		pc.Close()
	}
	t.Fatalf("dnstest: no port free for both UDP and TCP: %v", lastErr)
	return nil, nil
}

func startServer(t testing.TB, srv *dns.Server) {
	t.Helper()
	started := make(chan struct{})
	srv.NotifyStartedFunc = func() { close(started) }
	errc := make(chan error, 1)
	go func() { errc <- srv.ActivateAndServe() }()
	select {
	case <-started:
	case err := <-errc:
		t.Fatalf("dnstest: server did not start: %v", err)
	case <-time.After(5 * time.Second):
		t.Fatal("dnstest: server did not start within 5s")
	}
}

// Addr returns the server's address, "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.addr }

// Set makes every query for name answer records (zone-file syntax), filtered by type.
func (s *Server) Set(name string, records ...string) {
	s.Script(name, Response{Answer: records})
}

// Script makes the n-th query for name of a given type over a given transport (counted
// from 0, separately per type and transport) get responses[n]; the last one repeats.
// Records are checked now, so a typo fails the test at once.
func (s *Server) Script(name string, responses ...Response) {
	s.t.Helper()
	for _, r := range responses {
		for _, rec := range append(append(append([]string{}, r.Answer...), r.Ns...), r.Extra...) {
			if _, err := dns.NewRR(rec); err != nil {
				s.t.Fatalf("dnstest: bad record %q: %v", rec, err)
			}
		}
	}
	key := dns.CanonicalName(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts[key] = responses
	for k := range s.counts {
		if k.name == key {
			delete(s.counts, k)
		}
	}
}

// Queries returns how many queries for name arrived (every type and transport).
func (s *Server) Queries(name string) int {
	key := dns.CanonicalName(name)
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, q := range s.log {
		if q.Name == key {
			n++
		}
	}
	return n
}

// Log returns every query received, in order.
func (s *Server) Log() []Query {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Query(nil), s.log...)
}

func (s *Server) serve(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		reply := new(dns.Msg)
		reply.SetRcode(req, dns.RcodeFormatError)
		_ = w.WriteMsg(reply)
		return
	}
	q := req.Question[0]
	network := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		network = "tcp"
	}
	resp, scripted := s.pick(q, network)
	if !scripted {
		resp = Response{Rcode: dns.RcodeNameError}
	}
	if resp.Delay > 0 {
		time.Sleep(resp.Delay)
	}
	if resp.Drop {
		return
	}
	if resp.Raw != nil {
		_, _ = w.Write(resp.Raw(req))
		return
	}
	_ = w.WriteMsg(build(req, q, resp, network))
}

// pick returns the scripted response for this query and counts it.
func (s *Server) pick(q dns.Question, network string) (Response, bool) {
	name := dns.CanonicalName(q.Name)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = append(s.log, Query{Name: name, Type: q.Qtype, Net: network})
	script, ok := s.scripts[name]
	if !ok || len(script) == 0 {
		return Response{}, false
	}
	k := countKey{name, q.Qtype, network}
	n := s.counts[k]
	s.counts[k] = n + 1
	return script[min(n, len(script)-1)], true
}

func build(req *dns.Msg, q dns.Question, resp Response, network string) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(req)
	m.Compress = true
	m.RecursionAvailable = true
	m.Rcode = resp.Rcode
	if resp.Truncate && network == "udp" {
		m.Truncated = true
	} else {
		m.Answer = answerRecords(resp, q.Qtype)
		m.Ns = mustRRs(resp.Ns)
		m.Extra = mustRRs(resp.Extra)
	}
	if opt := req.IsEdns0(); opt != nil {
		m.SetEdns0(opt.UDPSize(), false)
	}
	if network == "udp" {
		// A real server truncates what does not fit the client's buffer.
		size := dns.MinMsgSize
		if opt := req.IsEdns0(); opt != nil {
			size = int(opt.UDPSize())
		}
		m.Truncate(size)
	}
	if resp.Mutate != nil {
		resp.Mutate(m)
	}
	return m
}

func answerRecords(resp Response, qtype uint16) []dns.RR {
	all := mustRRs(resp.Answer)
	if resp.AnyType {
		return all
	}
	var out []dns.RR
	for _, rr := range all {
		if t := rr.Header().Rrtype; t == qtype || t == dns.TypeCNAME {
			out = append(out, rr)
		}
	}
	return out
}

func mustRRs(records []string) []dns.RR {
	var out []dns.RR
	for _, rec := range records {
		rr, err := dns.NewRR(rec)
		if err != nil || rr == nil {
			continue // checked in Script
		}
		out = append(out, rr)
	}
	return out
}

// NewBlackhole returns a 127.0.0.1 address whose UDP and TCP sockets accept queries and
// never answer: a dead server that makes clients time out. It is closed in t.Cleanup.
func NewBlackhole(t testing.TB) string {
	t.Helper()
	pc, ln := listenPair(t)
	var wg sync.WaitGroup
	wg.Go(func() {
		buf := make([]byte, 65535)
		for {
			if _, _, err := pc.ReadFrom(buf); err != nil {
				return
			}
		}
	})
	var conns sync.Map
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Store(c, true)
		}
	})
	t.Cleanup(func() {
		pc.Close()
		ln.Close()
		conns.Range(func(k, _ any) bool { k.(net.Conn).Close(); return true })
		wg.Wait()
	})
	return pc.LocalAddr().String()
}

// ClosedAddr returns a 127.0.0.1 address where nothing listens (queries get
// "connection refused").
func ClosedAddr(t testing.TB) string {
	t.Helper()
	pc, ln := listenPair(t)
	addr := pc.LocalAddr().String()
	pc.Close()
	ln.Close()
	return addr
}
