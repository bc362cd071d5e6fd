package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// Two walks over every Backend follow each gather: the Secrets and ConfigMaps they
// refer to (translate.References) and the names the DNS guard must resolve
// (outsideNames). At 10,000 Backends they took some 25 and 18 ms of CPU a gather
// (2026-11-29), and a create gathers twice (gatherAnswered). A kind's last list is
// handed out again while no event of the kind came (gather_reuse.go), so when the lists
// a walk reads are the very lists the last walk read, its result is the last one.

// sameList tells whether a and b are the same memory: a list handed out again.
func sameList[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// When the Backends are the last walk's list patched with a few named Backends
// (gather_patch.go) and the other lists are the same, only the named Backends are walked
// again: the walk keeps what each Backend contributed and how many of the walked objects
// want each value, and its result changes only when a value comes or goes.

// backendShares is what each Backend of the last walk contributes (a name to resolve, a
// Secret it refers to) and how many contributions want each value, the other kinds'
// among them.
type backendShares[V comparable] struct {
	of     func(*egressv1alpha1.Backend) []V
	by     map[types.NamespacedName][]V
	counts map[V]int
}

// reset walks every Backend.
func (s *backendShares[V]) reset(backends []*egressv1alpha1.Backend) {
	s.by, s.counts = make(map[types.NamespacedName][]V, len(backends)), map[V]int{}
	for _, b := range backends {
		vs := s.of(b)
		s.by[client.ObjectKeyFromObject(b)] = vs
		for _, v := range vs {
			s.counts[v]++
		}
	}
}

// redo walks again the Backends p names, in backends (the patched list), and tells
// whether a value came or went (one that went and came back within the patch did not).
func (s *backendShares[V]) redo(backends []*egressv1alpha1.Backend, p listPatch) (changed bool) {
	had := map[V]bool{} // whether each value touched was wanted before the patch
	touch := func(v V, by int) {
		if _, seen := had[v]; !seen {
			had[v] = s.counts[v] > 0
		}
		if s.counts[v] += by; s.counts[v] == 0 {
			delete(s.counts, v)
		}
	}
	for _, name := range p.names {
		for _, v := range s.by[name] {
			touch(v, -1)
		}
		delete(s.by, name)
		if at, ok := p.index[name]; ok {
			vs := s.of(backends[at])
			s.by[name] = vs
			for _, v := range vs {
				touch(v, 1)
			}
		}
	}
	for v, before := range had {
		if before != (s.counts[v] > 0) {
			return true
		}
	}
	return false
}

// patchedFrom tells whether backends is last patched by p.
func patchedFrom(last, backends []*egressv1alpha1.Backend, p listPatch) bool {
	from, ok := p.from.([]*egressv1alpha1.Backend)
	return ok && p.index != nil && sameList(last, from) && len(p.index) == len(backends)
}

// referencesWalk is the last translate.References and the lists it read.
type referencesWalk struct {
	gateways  []gwapiv1.Gateway
	backends  []*egressv1alpha1.Backend
	xbackends []gwapixv1alpha1.XBackend
	policies  []gwapiv1.BackendTLSPolicy
	shares    backendShares[translate.ObjectRef]
	refs      []translate.ObjectRef
	done      bool
}

// references is translate.References(res), walked again only when a list it reads is
// new, and only for the Backends p names when the Backends list is the last one patched.
func (w *referencesWalk) references(res *egress.Resources, p listPatch) []translate.ObjectRef {
	others := w.done && sameList(w.gateways, res.Gateways) && sameList(w.xbackends, res.XBackends) && sameList(w.policies, res.BackendTLSPolicies)
	switch {
	case others && sameList(w.backends, res.Backends):
		return w.refs
	case others && patchedFrom(w.backends, res.Backends, p):
		w.backends = res.Backends
		if w.shares.redo(res.Backends, p) {
			w.refs = keysSortedBy(w.shares.counts, translate.SortReferences)
		}
		return w.refs
	}
	*w = referencesWalk{gateways: res.Gateways, backends: res.Backends, xbackends: res.XBackends,
		policies: res.BackendTLSPolicies, shares: backendShares[translate.ObjectRef]{of: translate.BackendReferences}, done: true}
	w.shares.reset(res.Backends)
	rest := *res
	rest.Backends = nil
	for _, ref := range translate.References(&rest) {
		w.shares.counts[ref]++
	}
	w.refs = keysSortedBy(w.shares.counts, translate.SortReferences)
	return w.refs
}

// namesWalk is the last outsideNames and the lists it read.
type namesWalk struct {
	backends  []*egressv1alpha1.Backend
	xbackends []gwapixv1alpha1.XBackend
	services  []corev1.Service
	shares    backendShares[string]
	out       []string
	done      bool
}

// names is outsideNames(res), walked again only when a list it reads is new, and only
// for the Backends p names when the Backends list is the last one patched; same tells
// that it is the last walk's result.
func (w *namesWalk) names(res *egress.Resources, p listPatch) (names []string, same bool) {
	others := w.done && sameList(w.xbackends, res.XBackends) && sameList(w.services, res.Services)
	switch {
	case others && sameList(w.backends, res.Backends):
		return w.out, true
	case others && patchedFrom(w.backends, res.Backends, p):
		w.backends = res.Backends
		if !w.shares.redo(res.Backends, p) {
			return w.out, true
		}
		w.out = sortedKeys(w.shares.counts)
		return w.out, false
	}
	*w = namesWalk{backends: res.Backends, xbackends: res.XBackends, services: res.Services,
		shares: backendShares[string]{of: backendOutsideName}, done: true}
	w.shares.reset(res.Backends)
	for _, n := range outsideNames(&egress.Resources{XBackends: res.XBackends, Services: res.Services}) {
		w.shares.counts[n]++
	}
	w.out = sortedKeys(w.shares.counts)
	return w.out, false
}

// keysSortedBy is the keys of m, sorted by sort.
func keysSortedBy[K comparable](m map[K]int, sort func([]K)) []K {
	out := make([]K, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort(out)
	return out
}
