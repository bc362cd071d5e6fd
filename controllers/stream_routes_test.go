package controllers

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestStreamRoutesThroughTheManager: a TCPRoute and a TLSRoute applied to the API
// server get their statuses (the route's parents, the listeners' supported kinds and
// attached routes), and a TCP connection through the Gateway's Envoy reaches the
// Backend's vetted address. When the Backend's name is rebound to an address the DNS
// guard refuses, the connection already open keeps working and new connections are
// closed within the answer's TTL (1 s) plus a refresh.
func TestStreamRoutesThroughTheManager(t *testing.T) {
	w := newWorld(t)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("stream-gw/egress")
	echo := echoLinesServer(t)
	w.dns.Set("db.stream.test", "db.stream.test. 1 IN A 127.0.0.1")
	w.apply(fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: stream-gw}
---
`+portcullisClassYAML+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: stream-gw}
spec:
  gatewayClassName: portcullis
  listeners:
  - {name: tcp, port: %d, protocol: TCP}
  - {name: tls, port: %d, protocol: TLS, tls: {mode: Passthrough}}
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: db, namespace: stream-gw}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: db.stream.test}
    ports: [{name: db, port: %d, protocol: TCP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TCPRoute
metadata: {name: db, namespace: stream-gw}
spec:
  parentRefs: [{name: egress, sectionName: tcp}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: db}]}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: TLSRoute
metadata: {name: nowhere, namespace: stream-gw}
spec:
  parentRefs: [{name: egress}]
  hostnames: [api.stream.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: missing, port: 443}]}]
`, w.port, xdstest.FreePort(t), echo))
	tcpRoute := &gwapiv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "stream-gw", Name: "db"}}
	tcpParents := func() []metav1.Condition { return firstParentConditions(tcpRoute.Status.Parents) }
	w.condition(tcpRoute, tcpParents, "Accepted", "True", "Accepted")
	w.condition(tcpRoute, tcpParents, "ResolvedRefs", "True", "ResolvedRefs")
	tlsRoute := &gwapiv1.TLSRoute{ObjectMeta: metav1.ObjectMeta{Namespace: "stream-gw", Name: "nowhere"}}
	tlsParents := func() []metav1.Condition { return firstParentConditions(tlsRoute.Status.Parents) }
	w.condition(tlsRoute, tlsParents, "Accepted", "True", "Accepted")
	w.condition(tlsRoute, tlsParents, "ResolvedRefs", "False", "BackendNotFound")
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: "stream-gw", Name: "egress"}}
	w.condition(gw, func() []metav1.Condition { return gw.Status.Conditions }, "Programmed", "True", "Programmed")
	for _, l := range gw.Status.Listeners {
		want := map[gwapiv1.SectionName]gwapiv1.Kind{"tcp": "TCPRoute", "tls": "TLSRoute"}[l.Name]
		if len(l.SupportedKinds) != 1 || l.SupportedKinds[0].Kind != want || l.AttachedRoutes != 1 {
			t.Errorf("listener %s: supportedKinds %v, attachedRoutes %d; want [%s], 1", l.Name, l.SupportedKinds, l.AttachedRoutes, want)
		}
	}

	var open net.Conn
	xdstest.WaitFor(t, 20*time.Second, "an echo through the TCP listener", func() error {
		c, err := streamEcho(w.port, "hello")
		if err != nil {
			return err
		}
		t.Cleanup(func() { c.Close() })
		open = c
		return nil
	})

	rebindToMetadata(t, w, "db.stream.test", "new connections", func() error {
		c, err := streamEcho(w.port, "again")
		if err == nil {
			c.Close()
			return fmt.Errorf("a new connection still reaches the destination")
		}
		return nil
	})
	if err := echoOn(open, "still open"); err != nil {
		t.Errorf("the connection open before the rebinding: %v", err)
	}
}

func firstParentConditions(parents []gwapiv1.RouteParentStatus) []metav1.Condition {
	if len(parents) == 0 {
		return nil
	}
	return parents[0].Conditions
}

// streamEcho connects to port from 127.0.0.1 and checks one echoed line.
func streamEcho(port uint32, line string) (net.Conn, error) {
	c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(int(port)), 5*time.Second)
	if err != nil {
		return nil, err
	}
	if err := echoOn(c, line); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func echoOn(c net.Conn, line string) error {
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return err
	}
	buf := make([]byte, len(line)+1)
	if _, err := io.ReadFull(c, buf); err != nil {
		return fmt.Errorf("echo of %q: %w", line, err)
	}
	if string(buf) != line+"\n" {
		return fmt.Errorf("echo of %q: got %q", line, buf)
	}
	return nil
}
