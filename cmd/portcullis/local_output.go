package main

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/localenv/demo"
)

// printer writes whole lines to the terminal; several goroutines share it.
type printer struct {
	w  io.Writer
	mu *sync.Mutex
}

func newPrinter(w io.Writer) printer { return printer{w: w, mu: &sync.Mutex{}} }

// linef prints one progress line.
func (p printer) linef(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "portcullis local: "+format+"\n", args...)
}

// block prints text as it is.
func (p printer) block(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, text)
}

// demoCurl is the request the demo answers through the gateway, as the README shows it.
func demoCurl() string {
	return fmt.Sprintf("curl -s -H 'Host: %s' http://127.0.0.1:%d/hello", demo.Hostname, translate.EnvoyPort(demo.GatewayPort))
}

// readyText tells the user what to type next.
func readyText(kubeconfig string, withDemo bool) string {
	var b strings.Builder
	b.WriteString("\nReady. In another terminal:\n\n")
	fmt.Fprintf(&b, "  export KUBECONFIG=%s\n", kubeconfig)
	if withDemo {
		b.WriteString("  kubectl get gateways,httproutes,backends -A\n")
		fmt.Fprintf(&b, "  %s\n", demoCurl())
	} else {
		b.WriteString("  kubectl apply -f samples/\n")
		b.WriteString("  kubectl get gateways,backends -A\n")
		b.WriteString("\nEach Gateway's address is printed here as it appears in its status.\n")
	}
	b.WriteString("\nCtrl-C here stops everything.\n")
	return b.String()
}

// demoWarning says loudly that the demo opens a hole in the DNS guard.
func demoWarning() string {
	bar := strings.Repeat("!", 78)
	return fmt.Sprintf(`%s
!!! DEMO ONLY: the DNS guard runs with --allow-cidr %s so that Backends may
!!! reach the demo API on this machine's loopback. Never use this exception
!!! outside a demo: it lets every Backend reach services on loopback.
%s
`, bar, demo.AllowCIDR, bar)
}

// gatewayLine describes where a Gateway listens, from its status.addresses, and where
// its Envoy's admin interface is (admin, "" while unknown); false while it has no
// address yet.
func gatewayLine(gw *gwapiv1.Gateway, admin string) (string, bool) {
	if len(gw.Status.Addresses) == 0 {
		return "", false
	}
	addrs := make([]string, 0, len(gw.Status.Addresses))
	for _, a := range gw.Status.Addresses {
		addrs = append(addrs, a.Value)
	}
	parts := []string{"address " + strings.Join(addrs, ", ")}
	for _, l := range gw.Spec.Listeners {
		parts = append(parts, fmt.Sprintf("listener %s (%s, port %d) at %s", l.Name, l.Protocol, l.Port, listenerURL(addrs[0], l)))
	}
	if admin != "" {
		parts = append(parts, "Envoy admin http://"+admin)
	}
	return fmt.Sprintf("gateway %s/%s: %s", gw.Namespace, gw.Name, strings.Join(parts, "; ")), true
}

// listenerURL is where a client on this machine reaches a listener: the host provider
// binds ports below 1024 at port+10000.
func listenerURL(addr string, l gwapiv1.Listener) string {
	hostPort := net.JoinHostPort(addr, strconv.Itoa(int(translate.EnvoyPort(l.Port))))
	switch l.Protocol {
	case gwapiv1.HTTPProtocolType:
		return "http://" + hostPort
	case gwapiv1.HTTPSProtocolType:
		return "https://" + hostPort
	}
	return hostPort
}
