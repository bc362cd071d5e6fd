package translate

import (
	"slices"
	"strings"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// A virtual host is a unit whose inputs are the route entries filed under its domain
// and under every wildcard domain that covers it. A route delta refiles each route that
// did not change with the very entries attaching it made (route_delta.go), so the
// entries of a host none of whose routes changed are, pointer for pointer, those of the
// kept route side, and the host is the kept one: the same Routes and Domains memory,
// which the Envoy build takes as unchanged without looking into it. An edit of one
// route in a table of ten thousand hosts then makes one virtual host, not ten thousand.

// hostTable is one route table as made: its virtual hosts, in name order, and by domain
// the entries each was made from, in precedence order.
type hostTable struct {
	entries map[string][]*routeEntry
	vhosts  []ir.VirtualHost
}

// keptHosts hands out a prior table's virtual hosts that are still as they would be
// made, in the order of the table being made.
type keptHosts struct {
	prior hostTable
	next  int
	// changed are the wildcard domains whose entries are not the prior's (or that came
	// or went): every host they cover is made again.
	changed []string
}

func newKeptHosts(prior hostTable, now map[string][]*routeEntry) keptHosts {
	k := keptHosts{prior: prior}
	if len(prior.vhosts) == 0 {
		return k
	}
	for d, entries := range now {
		if isWildcard(d) && !sameEntries(entries, prior.entries[d]) {
			k.changed = append(k.changed, d)
		}
	}
	for d := range prior.entries {
		if _, ok := now[d]; !ok && isWildcard(d) {
			k.changed = append(k.changed, d)
		}
	}
	return k
}

// take returns the prior virtual host named name, for domain d, when d's entries and
// those of every wildcard covering it are as they were. Names must come in order.
func (k *keptHosts) take(name, d string, entries []*routeEntry) (ir.VirtualHost, bool) {
	vhs := k.prior.vhosts
	for k.next < len(vhs) && vhs[k.next].Name < name {
		k.next++
	}
	if k.next == len(vhs) || vhs[k.next].Name != name || !sameEntries(entries, k.prior.entries[d]) {
		return ir.VirtualHost{}, false
	}
	for _, w := range k.changed {
		if w != d && (w == "*" || covers(w, d)) {
			return ir.VirtualHost{}, false
		}
	}
	return vhs[k.next], true
}

// sameEntries tells whether two domains' entry lists are the same entries in the same
// order. Entries are never modified once filed.
func sameEntries(a, b []*routeEntry) bool { return slices.Equal(a, b) }

func isWildcard(d string) bool { return d == "*" || strings.HasPrefix(d, "*.") }

// priorTables are the route tables of an Envoy port in the route side a delta
// refiles from, or none.
func (g *gatewayContext) priorTables(port uint32) httpTables {
	if g.prior == nil {
		return httpTables{}
	}
	return g.prior.tables[port]
}

// tenantPrior is the prior table of namespace ns; namespaces must come in order.
func (p *httpTables) tenantPrior(next *int, ns string) hostTable {
	for *next < len(p.tenants) && p.tenants[*next].Namespace < ns {
		*next++
	}
	if *next == len(p.tenants) || *next >= len(p.tenantHosts) || p.tenants[*next].Namespace != ns {
		return hostTable{}
	}
	return hostTable{entries: p.tenantHosts[*next], vhosts: p.tenants[*next].VirtualHosts}
}
