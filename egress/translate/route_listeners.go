package translate

import gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

// listenerChoices remembers, while one Gateway's routes attach, which listeners a
// parentRef without sectionName and port selects and which of them admit routes from
// each namespace. Thousands of routes name their Gateway that way; without it, each would
// scan the listeners and allocate the same two slices again. It lives for one
// attachRoutes call only, during which listeners and namespaces do not change.
type listenerChoices map[string]listenerChoice

type listenerChoice struct {
	selected, allowed []*listenerContext
}

// chooseListeners returns the valid listeners the parentRef selects and those among
// them that admit routes of kind from namespace ns (one choices map serves one kind).
// The slices may be shared between routes: callers only read them.
func (t *translator) chooseListeners(g *gatewayContext, choices listenerChoices, ref gwapiv1.ParentReference, ns string, kind gwapiv1.Kind) (selected, allowed []*listenerContext) {
	whole := ref.SectionName == nil && ref.Port == nil
	if c, ok := choices[ns]; ok && whole {
		return c.selected, c.allowed
	}
	selected = selectListeners(g, ref)
	allowed = t.allowingListeners(selected, ns, kind)
	if whole {
		choices[ns] = listenerChoice{selected: selected, allowed: allowed}
	}
	return selected, allowed
}
