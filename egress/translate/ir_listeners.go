package translate

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// buildListeners makes one IR listener per Envoy port from the valid Gateway listeners,
// with one virtual host per Host domain holding its routes in precedence order, and,
// when the Gateway isolates tenants, one such table per caller namespace. The
// certificates of the HTTPS listeners it serves join the Gateway's secrets here. A
// forward-proxy port's tables also carry the CONNECT tunnels (forward_proxy.go).
func (t *translator) buildListeners(g *gatewayContext) []ir.Listener {
	byPort := map[uint32]*ir.Listener{}
	for _, l := range g.listeners {
		if !l.served() {
			continue
		}
		out, ok := byPort[l.envoyPort]
		if !ok {
			out = &ir.Listener{Name: fmt.Sprintf("%s-%d", protocolPrefix(l.spec.Protocol), l.envoyPort), Port: l.envoyPort, Kind: listenerKindOf(l.spec.Protocol)}
			byPort[l.envoyPort] = out
		}
		out.ForwardProxy = out.ForwardProxy || l.forwardProxy
		if l.spec.Protocol == gwapiv1.HTTPSProtocolType {
			if out.TLS == nil {
				out.TLS = &ir.ListenerTLS{}
			}
			for _, secret := range l.certSecrets {
				g.secrets[secret.Name] = secret
				out.TLS.CertificateSecrets = appendUnique(out.TLS.CertificateSecrets, secret.Name)
			}
		}
	}
	var listeners []ir.Listener
	for port, l := range byPort {
		l.AccessLog = accessLogOn(g.gw)
		l.Isolated = g.isolated
		if l.Kind != ir.ListenerHTTP {
			t.fillStreams(g, l)
			listeners = append(listeners, *l)
			continue
		}
		var tunnels []tunnelTarget // nil unless a forward proxy
		if l.ForwardProxy {
			tunnels = t.tunnelTargets()
		}
		tables := t.httpTables(g, l, port, tunnels)
		l.VirtualHosts, l.Tenants = tables.virtualHosts, tables.tenants
		listeners = append(listeners, *l)
	}
	sort.Slice(listeners, func(i, j int) bool { return listeners[i].Port < listeners[j].Port })
	return listeners
}

// servesSharedTable tells whether a listener keeps the table of every route: on a
// Gateway that does not isolate tenants, or for the unrestricted callers of one that
// does. An isolating Gateway without them serves tenant tables only, so the shared
// table, as large as every tenant's together, is not built at all.
func (t *translator) servesSharedTable(g *gatewayContext) bool {
	return !g.isolated || len(t.opts.Unrestricted) > 0
}

// sharedTable is the table of every route on the listener's port; a forward proxy's
// also carries every tunnel.
func (t *translator) sharedTable(g *gatewayContext, l *ir.Listener, port uint32, tunnels []tunnelTarget, prior hostTable) hostTable {
	if l.ForwardProxy {
		return t.proxyVirtualHosts(g, port, g.hosts[port], tunnelTable(tunnels, ""), prior)
	}
	return hostTable{entries: g.hosts[port], vhosts: virtualHosts(port, g.hosts[port], prior)}
}

func protocolPrefix(p gwapiv1.ProtocolType) string {
	switch p {
	case gwapiv1.HTTPSProtocolType:
		return "https"
	case gwapiv1.TLSProtocolType:
		return "tls"
	case gwapiv1.TCPProtocolType:
		return "tcp"
	}
	return "http"
}

// virtualHosts makes one virtual host per domain. Envoy sends a request to the single most
// specific matching virtual host, so each one also carries, after its own routes, the
// routes of every wildcard domain that covers it (narrower wildcards first, "*" last):
// Gateway API gives the more specific hostname precedence but still lets a broader
// route serve what the narrower ones do not match.
//
// A host whose entries, and those of the wildcards covering it, are prior's is prior's
// own (host_reuse.go); prior is empty when there is none.
func virtualHosts(port uint32, hosts map[string][]*routeEntry, prior hostTable) []ir.VirtualHost {
	domains := make([]string, 0, len(hosts))
	for d := range hosts {
		sortByPrecedence(hosts[d])
		domains = append(domains, d)
	}
	sort.Strings(domains)
	broadest := widestLast(domains)
	out := make([]ir.VirtualHost, 0, len(domains))
	prefix := strconv.FormatUint(uint64(port), 10) + "/"
	kept := newKeptHosts(prior, hosts)
	for _, d := range domains {
		name := prefix + d
		if vh, ok := kept.take(name, d, hosts[d]); ok {
			out = append(out, vh)
			continue
		}
		vh := ir.VirtualHost{Name: name, Domains: []string{d}}
		var seen routeNames
		add := func(entries []*routeEntry) {
			for _, e := range entries {
				if !seen.has(vh.Routes, e.ir.Name) {
					seen.add(vh.Routes, e.ir.Name)
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

// routeNames tells whether a virtual host already has a route of a given name. Most
// virtual hosts hold a handful of routes, which are searched directly; past that a set
// is built, so that a host with thousands of routes stays linear.
type routeNames struct{ set map[string]bool }

const routeNamesSetSize = 16

func (s *routeNames) has(routes []ir.Route, name string) bool {
	if s.set != nil {
		return s.set[name]
	}
	for i := range routes {
		if routes[i].Name == name {
			return true
		}
	}
	return false
}

// add records name, about to be appended to routes.
func (s *routeNames) add(routes []ir.Route, name string) {
	if s.set == nil && len(routes) >= routeNamesSetSize {
		s.set = make(map[string]bool, 2*len(routes))
		for i := range routes {
			s.set[routes[i].Name] = true
		}
	}
	if s.set != nil {
		s.set[name] = true
	}
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
