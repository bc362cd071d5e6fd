package translate

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestRandomEditsTranslateAsCold walks every golden input through a fixed sequence of
// random edits of what the route side reads and what it cuts off (Backends' ports and
// destinations, routes' hostnames, refs and parents, listeners, grants, DNS answers,
// deletions and re-creations) and compares, after every edit, the translation with a
// warm Cache with a cold one. The seed is fixed: a failure names its input and step and
// happens again on every run.
func TestRandomEditsTranslateAsCold(t *testing.T) {
	const steps = 20
	for _, in := range goldenInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, in)
			if addrs == nil {
				addrs = egress.Addresses{}
			}
			e := &editor{rng: rand.New(rand.NewPCG(1, uint64(len(in)))), res: res, addrs: addrs}
			cache, versions := NewCache(), newAPIVersions()
			compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
			for i := range steps {
				what := e.randomEdit()
				compareWithCold(t, fmt.Sprintf("step %d: %s", i+1, what), cache, versions, res, addrs, opts)
			}
		})
	}
}

// editor makes random edits of one input.
type editor struct {
	rng   *rand.Rand
	res   *egress.Resources
	addrs egress.Addresses
	// deleted are the Backends deleteOrRestoreBackend took away, to bring back.
	deleted []*egressv1alpha1.Backend
}

// randomEdit changes one thing of the input, chosen at random, and says what. Only
// edits the API server would accept in substance are made: names stay valid, an
// object deleted may come back under its name.
func (e *editor) randomEdit() string {
	rng, res := e.rng, e.res
	edits := []func() string{
		func() string { return "nothing" },
		func() string { return editBackendPort(rng, res) },
		func() string { return editBackendDestination(rng, res) },
		func() string { return editRouteHostnames(rng, res) },
		func() string { return editRouteRefPort(rng, res) },
		func() string { return editRouteParent(rng, res) },
		func() string { return editListenerNamespaces(rng, res) },
		func() string { return editGrants(rng, res) },
		func() string { return editAnswer(rng, e.addrs) },
		e.deleteOrRestoreBackend,
	}
	return edits[rng.IntN(len(edits))]()
}

func editBackendPort(rng *rand.Rand, res *egress.Resources) string {
	if len(res.Backends) == 0 {
		return "no Backend to edit"
	}
	b := res.Backends[rng.IntN(len(res.Backends))]
	ports := b.Spec.Destination.Ports
	if len(ports) == 0 {
		return "a Backend without ports"
	}
	p := &ports[rng.IntN(len(ports))]
	switch rng.IntN(3) {
	case 0:
		p.Name += "x"
		return "Backend " + b.Name + ": a port renamed"
	case 1:
		p.Port++
		return "Backend " + b.Name + ": a port moved"
	}
	b.Spec.Destination.Ports = append(ports, egressv1alpha1.BackendPort{Name: fmt.Sprintf("extra%d", len(ports)), Port: 9000 + int32(len(ports)), Protocol: egressv1alpha1.PortProtocolHTTP})
	return "Backend " + b.Name + ": a port added"
}

func editBackendDestination(rng *rand.Rand, res *egress.Resources) string {
	for range len(res.Backends) {
		b := res.Backends[rng.IntN(len(res.Backends))]
		if f := b.Spec.Destination.FQDN; f != nil {
			f.Hostname = fmt.Sprintf("moved%d.example.com", rng.IntN(3))
			return "Backend " + b.Name + ": another hostname"
		}
	}
	return "no FQDN Backend"
}

func editRouteHostnames(rng *rand.Rand, res *egress.Resources) string {
	if len(res.HTTPRoutes) == 0 {
		return "no HTTPRoute"
	}
	r := res.HTTPRoutes[rng.IntN(len(res.HTTPRoutes))]
	hosts := []gwapiv1.Hostname{"api.example.com", "*.example.com", "moved0.example.com", "other.example.org"}
	r.Spec.Hostnames = []gwapiv1.Hostname{hosts[rng.IntN(len(hosts))]}
	return "HTTPRoute " + r.Name + ": hostnames " + string(r.Spec.Hostnames[0])
}

func editRouteRefPort(rng *rand.Rand, res *egress.Resources) string {
	for range len(res.HTTPRoutes) {
		r := res.HTTPRoutes[rng.IntN(len(res.HTTPRoutes))]
		for i := range r.Spec.Rules {
			if refs := r.Spec.Rules[i].BackendRefs; len(refs) > 0 {
				toggle(&refs[rng.IntN(len(refs))].Port, 443)
				return "HTTPRoute " + r.Name + ": a ref's port set or cleared"
			}
		}
	}
	return "no backendRef"
}

func editRouteParent(rng *rand.Rand, res *egress.Resources) string {
	for range len(res.HTTPRoutes) {
		r := res.HTTPRoutes[rng.IntN(len(res.HTTPRoutes))]
		if len(r.Spec.ParentRefs) > 0 {
			toggle(&r.Spec.ParentRefs[0].SectionName, "http")
			return "HTTPRoute " + r.Name + ": sectionName set or cleared"
		}
	}
	return "no parentRef"
}

// toggle sets an optional field to v when it is unset, and unsets it otherwise.
func toggle[T any](field **T, v T) {
	if *field == nil {
		*field = &v
	} else {
		*field = nil
	}
}

func editListenerNamespaces(rng *rand.Rand, res *egress.Resources) string {
	if len(res.Gateways) == 0 {
		return "no Gateway"
	}
	gw := &res.Gateways[rng.IntN(len(res.Gateways))]
	if len(gw.Spec.Listeners) == 0 {
		return "a Gateway without listeners"
	}
	l := &gw.Spec.Listeners[rng.IntN(len(gw.Spec.Listeners))]
	from := []gwapiv1.FromNamespaces{gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromSame}[rng.IntN(2)]
	l.AllowedRoutes = &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: &from}}
	return "Gateway " + gw.Name + " listener " + string(l.Name) + ": routes from " + string(from)
}

func editGrants(rng *rand.Rand, res *egress.Resources) string {
	if len(res.ReferenceGrants) == 0 {
		return "no ReferenceGrant"
	}
	i := rng.IntN(len(res.ReferenceGrants))
	res.ReferenceGrants = append(res.ReferenceGrants[:i:i], res.ReferenceGrants[i+1:]...)
	return "a ReferenceGrant deleted"
}

func editAnswer(rng *rand.Rand, addrs egress.Addresses) string {
	names := []string{"api.example.com", "moved0.example.com", "moved1.example.com"}
	name := names[rng.IntN(len(names))]
	if rng.IntN(3) == 0 {
		delete(addrs, name)
		return name + " no longer answered"
	}
	addrs[name] = resolved(fmt.Sprintf("203.0.113.%d", 20+rng.IntN(3)))
	return name + " answered"
}

// deleteOrRestoreBackend deletes a Backend, or brings back the last one deleted.
func (e *editor) deleteOrRestoreBackend() string {
	return deleteOrRestore(e.rng, &e.res.Backends, &e.deleted, "Backend", func(b **egressv1alpha1.Backend) string { return (*b).Name })
}

// deleteOrRestore deletes one of list at random, keeping it in deleted, or brings back
// the last one deleted, and says which.
func deleteOrRestore[T any](rng *rand.Rand, list, deleted *[]T, kind string, name func(*T) string) string {
	if len(*list) == 0 || rng.IntN(2) == 0 && len(*deleted) > 0 {
		if len(*deleted) == 0 {
			return "nothing to restore"
		}
		o := (*deleted)[len(*deleted)-1]
		*deleted = (*deleted)[:len(*deleted)-1]
		*list = append(*list, o)
		return kind + " " + name(&o) + " created again"
	}
	i := rng.IntN(len(*list))
	*deleted = append(*deleted, (*list)[i])
	*list = append((*list)[:i:i], (*list)[i+1:]...)
	return kind + " " + name(&(*deleted)[len(*deleted)-1]) + " deleted"
}
