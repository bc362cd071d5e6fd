package controllers

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// foreignController is another implementation's controllerName: its status entries are
// not ours to touch.
const foreignController = "example.com/another-controller"

// testBackendTLSPolicies: of two policies on one Service port the older wins and the
// other is Conflicted, a port-specific policy beats both, and the next in line takes
// over when the winner goes; other controllers' status entries survive our writes.
func testBackendTLSPolicies(t *testing.T, w *world) {
	t.Run("the older policy wins, a port-specific one beats it", func(t *testing.T) { testPolicyPrecedence(t, w.in(t)) })
	t.Run("other controllers' ancestor and parent entries are kept", func(t *testing.T) { testForeignStatusKept(t, w.in(t)) })
	t.Run("our ancestor entry goes when no route reaches the Service", func(t *testing.T) { testStaleAncestorDropped(t, w.in(t)) })
}

// testStaleAncestorDropped: once the only route to the Service is deleted, the policy no
// longer has our entry for that Gateway (a stale Accepted would claim we enforce it);
// another controller's entry stays.
func testStaleAncestorDropped(t *testing.T, w *world) {
	const ns = "btp-stale"
	w.applyCase(conditionCase{name: "stale ancestor", ns: ns, yaml: policyConsumerYAML}, suitePKI{})
	w.apply(policyYAML(ns, "p", "svc.suite.test", ""))
	waitWants(t, w, []want{on("BackendTLSPolicy", ns, "p").at("gw").is("Accepted=True/Accepted")}, 20*time.Second)
	writeForeignAncestor(t, w, types.NamespacedName{Namespace: ns, Name: "p"})

	remove(t, w, &gwapiv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Name: "r", Namespace: ns}})
	waitWants(t, w, []want{
		on("BackendTLSPolicy", ns, "p").at("gw").is("none"),
		on("BackendTLSPolicy", ns, "p").where("keeps the foreign ancestor entry", hasForeignEntry),
	}, 20*time.Second)
}

// policyConsumerYAML is a Service, a Backend sending to it and a route on Gateway gw.
const policyConsumerYAML = serviceWithPolicyYAML + `---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: svc}
    ports: [{name: https, port: 443, protocol: HTTPS}]
`

// policyYAML is a policy on Service svc (on its port https when sectionName is set),
// verifying the hostname against the System store.
func policyYAML(ns, name, hostname, sectionName string) string {
	section := ""
	if sectionName != "" {
		section = ", sectionName: " + sectionName
	}
	return fmt.Sprintf(`
apiVersion: gateway.networking.k8s.io/v1
kind: BackendTLSPolicy
metadata: {name: %s, namespace: %s}
spec:
  targetRefs: [{group: "", kind: Service, name: svc%s}]
  validation: {hostname: %s, wellKnownCACertificates: System}
`, name, ns, section, hostname)
}

func testPolicyPrecedence(t *testing.T, w *world) {
	const ns = "btp-precedence"
	w.applyCase(conditionCase{name: "policy precedence", ns: ns, yaml: policyConsumerYAML}, suitePKI{})
	// Named so that name order and age order disagree: age must decide. Creation
	// timestamps have a resolution of one second.
	older := w.apply(policyYAML(ns, "zz-older", "older.suite.test", ""))
	time.Sleep(1100 * time.Millisecond)
	w.apply(policyYAML(ns, "aa-newer", "newer.suite.test", ""))
	policy := func(name string) want { return on("BackendTLSPolicy", ns, name).at("gw") }
	usesPolicy := func(name, hostname string) want {
		return on("Backend", ns, "b").where("effectiveTLS from policy "+name,
			effectiveTLS(egressv1alpha1.TLSSourceBackendTLSPolicy, hostname, "", ns+"/"+name))
	}
	waitWants(t, w, []want{
		policy("zz-older").is("Accepted=True/Accepted"),
		policy("aa-newer").is("Accepted=False/Conflicted").with("BackendTLSPolicy " + ns + "/zz-older"),
		usesPolicy("zz-older", "older.suite.test"),
	}, 20*time.Second)

	port := w.apply(policyYAML(ns, "port", "port.suite.test", "https"))
	waitWants(t, w, []want{policy("port").is("Accepted=True/Accepted"), usesPolicy("port", "port.suite.test")}, 20*time.Second)

	remove(t, w, port...)
	waitWants(t, w, []want{usesPolicy("zz-older", "older.suite.test")}, 20*time.Second)
	remove(t, w, older...)
	waitWants(t, w, []want{policy("aa-newer").is("Accepted=True/Accepted"), usesPolicy("aa-newer", "newer.suite.test")}, 20*time.Second)
}

// testForeignStatusKept writes another controller's entries with the status subresource
// before any of ours exists, then checks they survive our first write and a rewrite
// after both objects changed.
func testForeignStatusKept(t *testing.T, w *world) {
	const ns = "btp-foreign"
	// The route and the policy exist before their Gateway, so none of our entries yet.
	w.applyCase(conditionCase{name: "foreign status", ns: ns, yaml: `
apiVersion: v1
kind: Service
metadata: {name: svc, namespace: {{.NS}}}
spec:
  ports: [{name: https, port: 443, targetPort: 8443}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: b, namespace: {{.NS}}}
spec:
  destination:
    type: Service
    kubernetesService: {name: svc}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: r, namespace: {{.NS}}}
spec:
  parentRefs: [{name: gw}, {name: their-gw}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: b}]}]
`}, suitePKI{})
	w.apply(policyYAML(ns, "p", "svc.suite.test", ""))
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	writeForeignParent(t, w, key("r"))
	writeForeignAncestor(t, w, key("p"))

	w.apply(render(t, snippets+`{{template "gw" .}}`, caseData{NS: ns, Class: suiteClass, Port: 8080}))
	kept := []want{
		on("HTTPRoute", ns, "r").where("keeps the foreign parent entry", hasForeignEntry),
		on("BackendTLSPolicy", ns, "p").where("keeps the foreign ancestor entry", hasForeignEntry),
	}
	waitWants(t, w, append([]want{
		on("HTTPRoute", ns, "r").at("gw").is("Accepted=True/Accepted"),
		on("BackendTLSPolicy", ns, "p").at("gw").is("Accepted=True/Accepted"),
	}, kept...), 20*time.Second)

	// New generations make us rewrite our entries.
	bump(t, w, &gwapiv1.HTTPRoute{}, key("r"), func(o client.Object) { o.(*gwapiv1.HTTPRoute).Spec.Hostnames = []gwapiv1.Hostname{"api.suite.test"} })
	bump(t, w, &gwapiv1.BackendTLSPolicy{}, key("p"), func(o client.Object) {
		o.(*gwapiv1.BackendTLSPolicy).Spec.Validation.Hostname = "renamed.suite.test"
	})
	generation2 := func(o client.Object) error {
		conds, _, _ := conditionsAt(o, "gw", w.controller)
		if c := findCond(conds, "Accepted"); c == nil || c.ObservedGeneration != 2 {
			return fmt.Errorf("our entry is %s", condString(conds))
		}
		return nil
	}
	waitWants(t, w, append([]want{
		on("HTTPRoute", ns, "r").where("our entry observed generation 2", generation2),
		on("BackendTLSPolicy", ns, "p").where("our entry observed generation 2", generation2),
	}, kept...), 20*time.Second)
}

// foreignConditions are what the other controller says.
func foreignConditions() []metav1.Condition {
	return []metav1.Condition{{Type: "Accepted", Status: metav1.ConditionTrue, Reason: "Accepted", Message: "theirs",
		ObservedGeneration: 1, LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))}}
}

func writeForeignParent(t *testing.T, w *world, key types.NamespacedName) {
	t.Helper()
	updateStatus(t, w, &gwapiv1.HTTPRoute{}, key, func(o client.Object) {
		r := o.(*gwapiv1.HTTPRoute)
		r.Status.Parents = append(r.Status.Parents, gwapiv1.RouteParentStatus{
			ParentRef: gwapiv1.ParentReference{Name: "their-gw"}, ControllerName: foreignController, Conditions: foreignConditions()})
	})
}

func writeForeignAncestor(t *testing.T, w *world, key types.NamespacedName) {
	t.Helper()
	updateStatus(t, w, &gwapiv1.BackendTLSPolicy{}, key, func(o client.Object) {
		p := o.(*gwapiv1.BackendTLSPolicy)
		p.Status.Ancestors = append(p.Status.Ancestors, gwapiv1.PolicyAncestorStatus{
			AncestorRef: gwapiv1.ParentReference{Name: "their-gw"}, ControllerName: foreignController, Conditions: foreignConditions()})
	})
}

// hasForeignEntry checks the other controller's entry is there, unchanged.
func hasForeignEntry(o client.Object) error {
	var controllers []gwapiv1.GatewayController
	var conds [][]metav1.Condition
	switch x := o.(type) {
	case *gwapiv1.HTTPRoute:
		for _, p := range x.Status.Parents {
			if p.ParentRef.Name == "their-gw" {
				controllers, conds = append(controllers, p.ControllerName), append(conds, p.Conditions)
			}
		}
	case *gwapiv1.BackendTLSPolicy:
		for _, a := range x.Status.Ancestors {
			if a.AncestorRef.Name == "their-gw" {
				controllers, conds = append(controllers, a.ControllerName), append(conds, a.Conditions)
			}
		}
	}
	want := foreignConditions()[0]
	if len(conds) != 1 || controllers[0] != foreignController || len(conds[0]) != 1 ||
		conds[0][0].Message != want.Message || !conds[0][0].LastTransitionTime.Equal(&want.LastTransitionTime) {
		return fmt.Errorf("entries for their-gw: %v %+v", controllers, conds)
	}
	return nil
}

// updateStatus changes an object's status through the status subresource.
func updateStatus(t *testing.T, w *world, obj client.Object, key types.NamespacedName, change func(client.Object)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		change(obj)
		return w.c.Status().Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatalf("update the status of %s: %v", key, err)
	}
}

// bump changes an object's spec.
func bump(t *testing.T, w *world, obj client.Object, key types.NamespacedName, change func(client.Object)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := w.c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		change(obj)
		return w.c.Update(context.Background(), obj)
	})
	if err != nil {
		t.Fatalf("update %s: %v", key, err)
	}
}
