package translate

import (
	"fmt"
	"sort"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// buildListeners makes one IR listener per Envoy port from the valid Gateway listeners,
// with one virtual host per Host domain holding its routes in precedence order.
func buildListeners(g *gatewayContext) []ir.Listener {
	byPort := map[uint32]*ir.Listener{}
	for _, l := range g.listeners {
		if !l.valid() {
			continue
		}
		out, ok := byPort[l.envoyPort]
		if !ok {
			out = &ir.Listener{Name: fmt.Sprintf("%s-%d", protocolPrefix(l.spec.Protocol), l.envoyPort), Port: l.envoyPort}
			byPort[l.envoyPort] = out
		}
		if l.spec.Protocol == gwapiv1.HTTPSProtocolType {
			if out.TLS == nil {
				out.TLS = &ir.ListenerTLS{}
			}
			out.TLS.CertificateSecrets = appendUnique(out.TLS.CertificateSecrets, l.certSecrets...)
		}
	}
	var listeners []ir.Listener
	for port, l := range byPort {
		l.VirtualHosts = virtualHosts(port, g.hosts[port])
		listeners = append(listeners, *l)
	}
	sort.Slice(listeners, func(i, j int) bool { return listeners[i].Port < listeners[j].Port })
	return listeners
}

func protocolPrefix(p gwapiv1.ProtocolType) string {
	if p == gwapiv1.HTTPSProtocolType {
		return "https"
	}
	return "http"
}

// virtualHosts makes one virtual host per domain. Envoy sends a request to the single most
// specific matching virtual host, so each one also carries, after its own routes, the
// routes of every wildcard domain that covers it (narrower wildcards first, "*" last):
// Gateway API gives the more specific hostname precedence but still lets a broader
// route serve what the narrower ones do not match.
func virtualHosts(port uint32, hosts map[string][]routeEntry) []ir.VirtualHost {
	domains := make([]string, 0, len(hosts))
	for d := range hosts {
		sortByPrecedence(hosts[d])
		domains = append(domains, d)
	}
	sort.Strings(domains)
	broadest := widestLast(domains)
	out := make([]ir.VirtualHost, 0, len(domains))
	for _, d := range domains {
		vh := ir.VirtualHost{Name: fmt.Sprintf("%d/%s", port, d), Domains: []string{d}}
		seen := map[string]bool{}
		add := func(entries []routeEntry) {
			for _, e := range entries {
				if !seen[e.ir.Name] {
					seen[e.ir.Name] = true
					vh.Routes = append(vh.Routes, e.ir)
				}
			}
		}
		add(hosts[d])
		for _, w := range broadest {
			if w != d && (w == "*" || covers(w, d)) {
				add(hosts[w])
			}
		}
		out = append(out, vh)
	}
	return out
}

// widestLast orders wildcard domains from the narrowest (longest) to "*".
func widestLast(domains []string) []string {
	var wild []string
	for _, d := range domains {
		if d == "*" || strings.HasPrefix(d, "*.") {
			wild = append(wild, d)
		}
	}
	sort.SliceStable(wild, func(i, j int) bool { return len(wild[i]) > len(wild[j]) })
	return wild
}

func appendUnique(list []string, items ...string) []string {
	for _, it := range items {
		found := false
		for _, x := range list {
			if x == it {
				found = true
				break
			}
		}
		if !found {
			list = append(list, it)
		}
	}
	return list
}
