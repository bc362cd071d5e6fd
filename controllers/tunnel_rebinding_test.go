package controllers

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestTunnelDNSRebinding: a CONNECT tunnel goes only to the DNS guard's vetted
// addresses, and they follow the name. When the name of a TCP Backend is rebound to an
// address the guard refuses (the metadata address), the tunnel already open keeps its
// connection, and every new CONNECT is refused within the answer's TTL (1 s, the
// world's minimum) plus a refresh, with the decision in the body (after, at most, a
// moment of "503 no healthy upstream" between the endpoints' update and the table's).
func TestTunnelDNSRebinding(t *testing.T) {
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("rebind-gw/egress")
	echo := echoLinesServer(t)
	w.dns.Set("db.rebind.test", "db.rebind.test. 1 IN A 127.0.0.1")
	w.apply(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: rebind-gw}
---
`+portcullisClassYAML+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: rebind-gw, annotations: {portcullis.io/forward-proxy: proxy}}
spec:
  gatewayClassName: portcullis
  listeners: [{name: proxy, port: %d, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: db, namespace: rebind-gw}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: db.rebind.test}
    ports: [{name: db, port: %d, protocol: TCP}]
`, w.port, echo))
	authority := "db.rebind.test:" + strconv.Itoa(int(echo))
	var open *bufio.ReadWriter
	xdstest.WaitFor(t, 20*time.Second, "a tunnel to "+authority, func() error {
		rw, c, err := connect(w.port, authority)
		if err != nil {
			return err
		}
		t.Cleanup(func() { c.Close() })
		open = rw
		return nil
	})
	roundTrip(t, open, "before")

	rebindToMetadata(t, w, "db.rebind.test", "new tunnels", func() error {
		_, c, err := connect(w.port, authority)
		if err == nil {
			c.Close()
			return fmt.Errorf("CONNECT %s still opens a tunnel", authority)
		}
		switch err.Error() {
		case "403 " + envoyconfig.DecisionNoAddress + "\n":
			return nil
		case "503 no healthy upstream":
			// The cluster's emptied endpoints and the table that denies the tunnel are
			// two xDS resources, and Envoy may apply the endpoints first: refused
			// either way, and the table follows (seen once in a loaded make test run).
			return err
		}
		return xdstest.Permanent(fmt.Errorf("CONNECT refused with %v, want 403 %q", err, envoyconfig.DecisionNoAddress))
	})
	roundTrip(t, open, "after") // the tunnel that was open is not cut
}

// rebindToMetadata rebinds name (TTL 1 s) to the cloud metadata address, which the DNS
// guard refuses, and waits until refused says the new connections (what) are refused;
// that must take no longer than the TTL and a refresh (5 s).
func rebindToMetadata(t *testing.T, w *world, name, what string, refused func() error) {
	t.Helper()
	w.dns.Set(name, name+". 1 IN A 169.254.169.254")
	rebound := time.Now()
	xdstest.WaitFor(t, 10*time.Second, what+" to be refused", refused)
	if cut := time.Since(rebound); cut > 5*time.Second {
		t.Errorf("%s were refused %v after the rebinding, want within the 1 s TTL and a refresh (5 s)", what, cut)
	} else {
		t.Logf("%s refused %v after the rebinding", what, cut.Round(time.Millisecond))
	}
}

// connect opens a CONNECT tunnel through the proxy on port from 127.0.0.1; a refusal
// is an error "<status> <body>".
func connect(port uint32, authority string) (*bufio.ReadWriter, net.Conn, error) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), 5*time.Second)
	if err != nil {
		return nil, nil, err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority)
	r := bufio.NewReader(c)
	resp, err := http.ReadResponse(r, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		return nil, nil, fmt.Errorf("%d %s", resp.StatusCode, body)
	}
	return bufio.NewReadWriter(r, bufio.NewWriter(c)), c, nil
}

func roundTrip(t *testing.T, rw *bufio.ReadWriter, line string) {
	t.Helper()
	if _, err := rw.WriteString(line + "\n"); err != nil || rw.Flush() != nil {
		t.Fatalf("write %q through the tunnel: %v", line, err)
	}
	if got, err := rw.ReadString('\n'); err != nil || got != line+"\n" {
		t.Fatalf("echo of %q through the tunnel: %q, %v", line, got, err)
	}
}

// echoLinesServer echoes lines on a loopback port until the test ends.
func echoLinesServer(t *testing.T) uint32 {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	return uint32(l.Addr().(*net.TCPAddr).Port)
}
