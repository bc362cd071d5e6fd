package translate

import (
	"sort"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// listenerKindOf is the IR listener kind of a Gateway listener protocol.
func listenerKindOf(p gwapiv1.ProtocolType) ir.ListenerKind {
	switch p {
	case gwapiv1.TLSProtocolType:
		return ir.ListenerTLSPassthrough
	case gwapiv1.TCPProtocolType:
		return ir.ListenerTCP
	}
	return ir.ListenerHTTP
}

// fillStreams gives a stream listener its route tables: the shared one (for every
// caller, or for unrestricted ones when isolated) and, when isolated, one per caller
// namespace with the routes of that namespace and those admitting it.
func (t *translator) fillStreams(g *gatewayContext, l *ir.Listener) {
	entries := g.streams[l.Port]
	if !g.isolated || len(t.opts.Unrestricted) > 0 {
		l.Streams = streamTable(entries, func(*streamRoute) bool { return true })
	}
	if !g.isolated {
		return
	}
	byNS := map[string]bool{}
	for _, e := range entries {
		for _, ns := range t.streamCallers(e.route) {
			byNS[ns] = true
		}
	}
	namespaces := make([]string, 0, len(byNS))
	for ns := range byNS {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		admits := func(r *streamRoute) bool { return contains(t.streamCallers(r), ns) }
		l.Tenants = append(l.Tenants, ir.Tenant{Namespace: ns, Streams: streamTable(entries, admits)})
	}
}

// streamTable is one route table of a stream listener: each server name goes to the
// oldest route that claims it (entries are oldest first), so a route left with no name
// is not in the table. A route attached to several listeners of the port gets their
// names together.
func streamTable(entries []streamEntry, admit func(*streamRoute) bool) []ir.StreamRoute {
	taken := map[string]bool{}
	index := map[string]int{}
	var out []ir.StreamRoute
	for _, e := range entries {
		if !admit(e.route) {
			continue
		}
		var names []string
		for _, n := range e.ir.ServerNames {
			if !taken[n] {
				taken[n] = true
				names = append(names, n)
			}
		}
		if len(names) == 0 {
			continue
		}
		if i, ok := index[e.ir.Name]; ok {
			out[i].ServerNames = append(out[i].ServerNames, names...)
			sort.Strings(out[i].ServerNames)
			continue
		}
		r := e.ir
		r.ServerNames = names
		sort.Strings(r.ServerNames)
		index[r.Name] = len(out)
		out = append(out, r)
	}
	return out
}
