// Package testupstream runs a local HTTP(S) server for end-to-end tests that records what
// it saw of each request — SNI, client certificate, protocol, headers — so a test can
// assert what really reached the upstream through Envoy.
package testupstream

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Seen is what the upstream observed of one request.
type Seen struct {
	TLS        bool
	SNI        string
	ClientCN   string
	Proto      string
	Method     string
	Host       string
	Path       string
	Header     http.Header
	RemoteAddr string
}

// Options configure the upstream.
type Options struct {
	// Certificate enables TLS; nil serves plaintext (HTTP/1.1 and prior-knowledge h2c).
	Certificate *tls.Certificate
	// ClientCAs, when set, require a client certificate signed by them.
	ClientCAs *x509.CertPool
	// ServerName, when set, fails every TLS handshake whose SNI is another name (or none).
	ServerName string
	// HTTP2 offers h2 by ALPN over TLS (always accepted as h2c in plaintext).
	HTTP2 bool
	// Name is put in every response body, to tell upstreams apart.
	Name string
	// Addr is the host:port to listen on (default 127.0.0.1:0).
	Addr string
	// CloseConnections answers with "Connection: close", so every request opens a new
	// connection (and a new TLS handshake).
	CloseConnections bool
}

// Server is a running upstream.
type Server struct {
	Addr     string
	opts     Options
	mu       sync.Mutex
	seen     []Seen
	status   atomic.Int32
	delay    atomic.Int64
	open     atomic.Int32
	maxOpen  atomic.Int32
	listener net.Listener
	srv      *http.Server
}

// Start runs an upstream on 127.0.0.1 until the test ends.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	addr := o.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), opts: o, listener: ln}
	s.status.Store(http.StatusOK)
	s.srv = &http.Server{Handler: http.HandlerFunc(s.handle), ConnState: s.connState, ReadHeaderTimeout: 10 * time.Second}
	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	if o.Certificate != nil {
		cfg := &tls.Config{Certificates: []tls.Certificate{*o.Certificate}, MinVersion: tls.VersionTLS12}
		if o.ClientCAs != nil {
			cfg.ClientCAs, cfg.ClientAuth = o.ClientCAs, tls.RequireAndVerifyClientCert
		}
		if want := o.ServerName; want != "" {
			cfg.VerifyConnection = func(cs tls.ConnectionState) error {
				if cs.ServerName != want {
					return fmt.Errorf("SNI %q, want %q", cs.ServerName, want)
				}
				return nil
			}
		}
		if o.HTTP2 {
			protocols.SetHTTP2(true)
		}
		s.srv.TLSConfig = cfg
	} else {
		protocols.SetUnencryptedHTTP2(true)
	}
	s.srv.Protocols = protocols
	go func() {
		if o.Certificate != nil {
			_ = s.srv.ServeTLS(ln, "", "")
			return
		}
		_ = s.srv.Serve(ln)
	}()
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

// Port returns the listening port.
func (s *Server) Port() uint32 {
	_, p, _ := net.SplitHostPort(s.Addr)
	var n uint32
	fmt.Sscan(p, &n)
	return n
}

// Respond makes every later request answer with this status code.
func (s *Server) Respond(status int) { s.status.Store(int32(status)) }

// Delay makes every later request wait this long before answering.
func (s *Server) Delay(d time.Duration) { s.delay.Store(int64(d)) }

// Requests returns what the upstream saw so far.
func (s *Server) Requests() []Seen {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Seen(nil), s.seen...)
}

// MaxOpenConnections is the largest number of connections open at once so far.
func (s *Server) MaxOpenConnections() int { return int(s.maxOpen.Load()) }

func (s *Server) connState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		n := s.open.Add(1)
		for {
			m := s.maxOpen.Load()
			if n <= m || s.maxOpen.CompareAndSwap(m, n) {
				break
			}
		}
	case http.StateClosed, http.StateHijacked:
		s.open.Add(-1)
	}
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	seen := Seen{Proto: r.Proto, Method: r.Method, Host: r.Host, Path: r.URL.RequestURI(), Header: r.Header.Clone(), RemoteAddr: r.RemoteAddr}
	if r.TLS != nil {
		seen.TLS, seen.SNI = true, r.TLS.ServerName
		if len(r.TLS.PeerCertificates) > 0 {
			seen.ClientCN = r.TLS.PeerCertificates[0].Subject.CommonName
		}
	}
	s.mu.Lock()
	s.seen = append(s.seen, seen)
	s.mu.Unlock()
	if strings.EqualFold(r.Header.Get("Upgrade"), "websocket") {
		s.upgrade(w)
		return
	}
	time.Sleep(time.Duration(s.delay.Load()))
	w.Header().Set("X-Upstream", s.opts.Name)
	if s.opts.CloseConnections {
		w.Header().Set("Connection", "close")
	}
	w.WriteHeader(int(s.status.Load()))
	fmt.Fprintf(w, "hello from %s via %s\n", s.opts.Name, r.Proto)
}

// upgrade answers a WebSocket handshake with 101 and then echoes bytes back, which is
// all an end-to-end test needs to prove the upgrade crossed the gateway.
func (s *Server) upgrade(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "cannot upgrade", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	_, _ = rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: test\r\n\r\n")
	_ = rw.Flush()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.Copy(conn, bufio.NewReader(rw))
}
