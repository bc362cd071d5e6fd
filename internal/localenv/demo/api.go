package demo

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/portcullis-io/portcullis/internal/localenv"
)

// API is the demo's outside API: HTTPS, client certificate required.
type API struct {
	Addr string
	srv  *http.Server
}

// StartAPI serves on addr with the server certificate, requiring a client certificate
// signed by clientCAs.
func StartAPI(addr string, server localenv.KeyPair, clientCAs *x509.CertPool) (*API, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{
		Handler:           http.HandlerFunc(answer),
		ReadHeaderTimeout: 10 * time.Second,
		// A refused handshake is the point of a client-certificate demo, not news.
		ErrorLog: log.New(io.Discard, "", 0),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{server.TLS}, MinVersion: tls.VersionTLS12,
			ClientCAs: clientCAs, ClientAuth: tls.RequireAndVerifyClientCert,
		},
	}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	return &API{Addr: ln.Addr().String(), srv: srv}, nil
}

// Close stops the server.
func (a *API) Close() error { return a.srv.Close() }

// Answer is the body the API returns: what it saw of the TLS connection, so the
// answer proves the gateway originated TLS with the demo client certificate.
func Answer(method, path, serverName, clientCN string) string {
	return fmt.Sprintf("hello from %s: %s %s, TLS server name %s, client certificate CN=%s\n", Hostname, method, path, serverName, clientCN)
}

func answer(w http.ResponseWriter, r *http.Request) {
	clientCN := "(none)"
	if len(r.TLS.PeerCertificates) > 0 {
		clientCN = r.TLS.PeerCertificates[0].Subject.CommonName
	}
	serverName := r.TLS.ServerName
	if serverName == "" {
		serverName = "(none)"
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	fmt.Fprint(w, Answer(r.Method, r.URL.Path, serverName, clientCN))
}
