package translate

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestRouteEditsTranslateAsCold walks every golden input through a fixed sequence of
// random HTTPRoute edits (a path, hostnames, a ref's port, a route deleted, created again
// or copied under a new name, a Backend deleted or created again) and compares, after every edit, the translation with a
// warm Cache with a cold one. Across the inputs, edits must have been taken as route
// deltas: otherwise the comparison proves nothing about them.
func TestRouteEditsTranslateAsCold(t *testing.T) {
	const steps = 16
	deltas, edits := uint64(0), 0
	for _, in := range goldenInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, in)
			if addrs == nil {
				addrs = egress.Addresses{}
			}
			e := &routeEditor{rng: rand.New(rand.NewPCG(2, uint64(len(in)))), res: res}
			cache, versions := NewCache(), newAPIVersions()
			compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
			before := cache.Deltas()
			for i := range steps {
				what := e.randomEdit()
				compareWithCold(t, fmt.Sprintf("step %d: %s", i+1, what), cache, versions, res, addrs, opts)
			}
			deltas, edits = deltas+cache.Deltas()-before, edits+steps
		})
	}
	t.Logf("%d of %d route edits translated as deltas", deltas, edits)
	if deltas < uint64(edits)/10 {
		t.Errorf("only %d of %d route edits translated as deltas", deltas, edits)
	}
}

// routeEditor makes random HTTPRoute edits of one input.
type routeEditor struct {
	rng             *rand.Rand
	res             *egress.Resources
	deleted         []*gwapiv1.HTTPRoute
	deletedBackends []*egressv1alpha1.Backend
	copies          int
}

func (e *routeEditor) randomEdit() string {
	rng, res := e.rng, e.res
	if len(res.HTTPRoutes) == 0 && len(e.deleted) == 0 {
		return "no HTTPRoute"
	}
	edits := []func() string{
		func() string { return editRoutePath(rng, res) },
		func() string { return editRouteHostnames(rng, res) },
		func() string { return editRouteRefPort(rng, res) },
		e.deleteOrRestoreRoute,
		e.copyRoute,
		e.createBackendAndRoute,
		e.editBackendAndRoute,
		e.deleteOrRestoreBackend,
	}
	return edits[rng.IntN(len(edits))]()
}

// editRoutePath gives a route's first rule one path match of its own.
func editRoutePath(rng *rand.Rand, res *egress.Resources) string {
	if len(res.HTTPRoutes) == 0 {
		return "no HTTPRoute"
	}
	r := res.HTTPRoutes[rng.IntN(len(res.HTTPRoutes))]
	if len(r.Spec.Rules) == 0 {
		return "a route without rules"
	}
	prefix, path := gwapiv1.PathMatchPathPrefix, fmt.Sprintf("/p%d", rng.IntN(100))
	r.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
	return "HTTPRoute " + r.Name + ": path " + path
}

func (e *routeEditor) deleteOrRestoreRoute() string {
	return deleteOrRestore(e.rng, &e.res.HTTPRoutes, &e.deleted, "HTTPRoute", func(r **gwapiv1.HTTPRoute) string { return (*r).Name })
}

// deleteOrRestoreBackend deletes a Backend (routes may still name it) or creates a
// deleted one again.
func (e *routeEditor) deleteOrRestoreBackend() string {
	return deleteOrRestore(e.rng, &e.res.Backends, &e.deletedBackends, "Backend", func(b **egressv1alpha1.Backend) string { return (*b).Name })
}

// copyRoute creates a route like another under a new name, as a tenant applying a
// second route to the same Backend does.
func (e *routeEditor) copyRoute() string {
	if len(e.res.HTTPRoutes) == 0 {
		return "no HTTPRoute to copy"
	}
	r := e.res.HTTPRoutes[e.rng.IntN(len(e.res.HTTPRoutes))].DeepCopy()
	e.copies++
	r.Name = fmt.Sprintf("%s-copy%d", r.Name, e.copies)
	r.UID, r.ResourceVersion, r.Generation = "", "", 0
	e.res.HTTPRoutes = append(e.res.HTTPRoutes, r)
	return "HTTPRoute " + r.Name + " created"
}

// createBackendAndRoute creates, together, a copy of a Backend a route names under a new
// name and a copy of that route sending to it: a user applying both in one go.
func (e *routeEditor) createBackendAndRoute() string {
	for _, r := range e.res.HTTPRoutes {
		for _, ref := range routeRefs(r) {
			for _, b := range e.res.Backends {
				if !namesBackend(ref) || refTarget(r.Namespace, ref) != (types.NamespacedName{Namespace: b.Namespace, Name: b.Name}) {
					continue
				}
				e.copies++
				nb, nr := b.DeepCopy(), r.DeepCopy()
				nb.Name, nb.UID, nb.ResourceVersion, nb.Generation = fmt.Sprintf("%s-new%d", b.Name, e.copies), "", "", 0
				nr.Name, nr.UID, nr.ResourceVersion, nr.Generation = fmt.Sprintf("%s-new%d", r.Name, e.copies), "", "", 0
				for i := range nr.Spec.Rules {
					for j := range nr.Spec.Rules[i].BackendRefs {
						nr.Spec.Rules[i].BackendRefs[j].Name = gwapiv1.ObjectName(nb.Name)
						nr.Spec.Rules[i].BackendRefs[j].Namespace = nil
					}
				}
				nb.Namespace = r.Namespace
				e.res.Backends, e.res.HTTPRoutes = append(e.res.Backends, nb), append(e.res.HTTPRoutes, nr)
				return "Backend " + nb.Name + " and HTTPRoute " + nr.Name + " created"
			}
		}
	}
	return "no route to a Backend to copy"
}

// editBackendAndRoute edits, together, a route's path and the first port of a Backend
// it names: its name (so its cluster's) or its number (so the ref may no longer match).
func (e *routeEditor) editBackendAndRoute() string {
	for i := range e.res.HTTPRoutes {
		r := e.res.HTTPRoutes[i]
		for _, ref := range routeRefs(r) {
			for j := range e.res.Backends {
				b := e.res.Backends[j]
				if !namesBackend(ref) || refTarget(r.Namespace, ref) != (types.NamespacedName{Namespace: b.Namespace, Name: b.Name}) || len(b.Spec.Destination.Ports) == 0 {
					continue
				}
				p := &b.Spec.Destination.Ports[0]
				if e.rng.IntN(2) == 0 {
					e.copies++
					p.Name = fmt.Sprintf("renamed%d", e.copies)
				} else {
					p.Port = 443 + 8000 - p.Port // 443 <-> 8000
				}
				prefix, path := gwapiv1.PathMatchPathPrefix, fmt.Sprintf("/q%d", e.rng.IntN(100))
				if len(r.Spec.Rules) > 0 {
					r.Spec.Rules[0].Matches = []gwapiv1.HTTPRouteMatch{{Path: &gwapiv1.HTTPPathMatch{Type: &prefix, Value: &path}}}
				}
				return "Backend " + b.Name + " port and HTTPRoute " + r.Name + " path edited"
			}
		}
	}
	return "no route to a Backend to edit"
}
