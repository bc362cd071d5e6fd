package translate

import (
	"slices"
	"testing"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestListenerChoicesFollowEveryInput asks one listenerChoices, in turn, about parentRefs
// and namespaces that must each get their own answer, and compares every answer with the
// listeners chosen without the memo: a memo that ignored the namespace, the sectionName
// or the port would hand out an earlier answer.
func TestListenerChoicesFollowEveryInput(t *testing.T) {
	all, selector := gwapiv1.NamespacesFromAll, gwapiv1.NamespacesFromSelector
	listener := func(name string, port gwapiv1.PortNumber, from *gwapiv1.FromNamespaces) *listenerContext {
		spec := &gwapiv1.Listener{Name: gwapiv1.SectionName(name), Port: port}
		if from != nil {
			spec.AllowedRoutes = &gwapiv1.AllowedRoutes{Namespaces: &gwapiv1.RouteNamespaces{From: from}}
		}
		return &listenerContext{spec: spec, gatewayNamespace: "gw", supportedKinds: []gwapiv1.RouteGroupKind{httpRouteKind}}
	}
	broken := listener("broken", 82, &all)
	broken.problem = "Invalid"
	g := &gatewayContext{listeners: []*listenerContext{
		listener("same", 80, nil), listener("any", 81, &all), broken, listener("labelled", 8080, &selector),
	}}
	tr := &translator{namespaceLabel: map[string]map[string]string{"apps": {"team": "a"}}}
	section, port := gwapiv1.SectionName("same"), gwapiv1.PortNumber(81)
	steps := []struct {
		name string
		ref  gwapiv1.ParentReference
		ns   string
	}{
		{"whole Gateway, its own namespace", gwapiv1.ParentReference{}, "gw"},
		{"whole Gateway, its own namespace again", gwapiv1.ParentReference{}, "gw"},
		{"whole Gateway, another namespace", gwapiv1.ParentReference{}, "apps"},
		{"a sectionName, its own namespace", gwapiv1.ParentReference{SectionName: &section}, "gw"},
		{"a sectionName, another namespace", gwapiv1.ParentReference{SectionName: &section}, "apps"},
		{"a port", gwapiv1.ParentReference{Port: &port}, "gw"},
		{"whole Gateway after the others", gwapiv1.ParentReference{}, "apps"},
	}
	choices := listenerChoices{}
	for _, step := range steps {
		gotSelected, gotAllowed := tr.chooseListeners(g, choices, step.ref, step.ns, "HTTPRoute")
		wantSelected := selectListeners(g, step.ref)
		wantAllowed := tr.allowingListeners(wantSelected, step.ns, "HTTPRoute")
		if !slices.Equal(gotSelected, wantSelected) || !slices.Equal(gotAllowed, wantAllowed) {
			t.Errorf("%s: chose %s allowing %s; want %s allowing %s", step.name,
				listenerNames(gotSelected), listenerNames(gotAllowed), listenerNames(wantSelected), listenerNames(wantAllowed))
		}
	}
}

func listenerNames(ls []*listenerContext) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = string(l.spec.Name)
	}
	return out
}
