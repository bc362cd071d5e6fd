package controllers

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// Events follow the conditions the status writer stores, so `kubectl get events
// --field-selector type=Warning` lists every mistake once: a Warning when a condition
// turns False (or stays False for another reason), a Normal event when one that was
// warned about turns True again. Comparing the stored status with the written one, and
// only after the write succeeded, makes a persisting problem one Event rather than one
// per reconcile, and only the status writer (the leader, in HA) emits. Messages are the
// conditions' own, which never hold a secret.

// eventedConditions are the condition types for which True means healthy. Others
// (Conflicted, portcullis.io/TenantIsolation) say nothing wrong when False.
var eventedConditions = map[string]bool{
	egressv1alpha1.ConditionAccepted:          true,
	egressv1alpha1.ConditionResolvedRefs:      true,
	egressv1alpha1.ConditionAddressesResolved: true,
	egressv1alpha1.ConditionProgrammed:        true,
	// An XBackend's parent entries carry the DNS guard's verdict under this name.
	translate.ConditionXBackendAddressesResolved: true,
}

// quietReasons are False states that are waits, not mistakes: Envoy has yet to
// acknowledge (every edit passes through it) or no route uses the Backend yet.
var quietReasons = map[string]bool{
	egressv1alpha1.ReasonPending:       true,
	egressv1alpha1.ReasonNotReferenced: true,
}

// conditionEvent is one Event to emit.
type conditionEvent struct {
	eventType, reason, message string
}

// conditionSets are an object's condition lists by scope: "" for the object's own, and
// e.g. "listener http" or "parent ns/gw" for the entries of its status lists.
type conditionSets map[string][]metav1.Condition

// conditionsOf reads the condition lists of a status the writer stores; for routes and
// policies only the entries of controller (others' entries are not ours to report).
func conditionsOf(obj client.Object, controller gwapiv1.GatewayController) conditionSets {
	out := conditionSets{}
	switch o := obj.(type) {
	case *egressv1alpha1.Backend:
		out[""] = o.Status.Conditions
	case *gwapiv1.GatewayClass:
		out[""] = o.Status.Conditions
	case *gwapiv1.Gateway:
		out[""] = o.Status.Conditions
		for _, l := range o.Status.Listeners {
			out["listener "+string(l.Name)] = l.Conditions
		}
	case *gwapiv1.HTTPRoute:
		routeParentConditions(out, o.Status.Parents, o.Namespace, controller)
	case *gwapiv1.TLSRoute:
		routeParentConditions(out, o.Status.Parents, o.Namespace, controller)
	case *gwapiv1.TCPRoute:
		routeParentConditions(out, o.Status.Parents, o.Namespace, controller)
	case *gwapiv1.BackendTLSPolicy:
		for _, a := range o.Status.Ancestors {
			if a.ControllerName == controller {
				out["ancestor "+parentRefString(a.AncestorRef, o.Namespace)] = a.Conditions
			}
		}
	case *gwapixv1alpha1.XBackend:
		for _, p := range o.Status.Ancestors {
			if p.ControllerName == controller {
				out["parent "+parentRefString(p.AncestorRef, o.Namespace)] = p.Conditions
			}
		}
	}
	return out
}

// routeParentConditions files a route's parent entries of controller by parent.
func routeParentConditions(out conditionSets, parents []gwapiv1.RouteParentStatus, namespace string, controller gwapiv1.GatewayController) {
	for _, p := range parents {
		if p.ControllerName == controller {
			out["parent "+parentRefString(p.ParentRef, namespace)] = p.Conditions
		}
	}
}

// parentRefString is "namespace/name", with "/section" when the reference names one.
func parentRefString(ref gwapiv1.ParentReference, defaultNamespace string) string {
	ns := defaultNamespace
	if ref.Namespace != nil {
		ns = string(*ref.Namespace)
	}
	s := ns + "/" + string(ref.Name)
	if ref.SectionName != nil {
		s += "/" + string(*ref.SectionName)
	}
	return s
}

// conditionEvents are the Events that the change from before to after calls for, in a
// stable order (scopes sorted, conditions in list order).
func conditionEvents(before, after conditionSets) []conditionEvent {
	scopes := make([]string, 0, len(after))
	for s := range after {
		scopes = append(scopes, s)
	}
	sort.Strings(scopes)
	var out []conditionEvent
	for _, scope := range scopes {
		for _, c := range after[scope] {
			if e, ok := transitionEvent(findCond(before[scope], c.Type), c); ok {
				if scope != "" {
					e.message = fmt.Sprintf("%s: %s", scope, e.message)
				}
				out = append(out, e)
			}
		}
	}
	return out
}

// transitionEvent: a Warning when cur is a new problem (False, and before it was not
// False for the same reason); a Normal event when a problem that was warned about is
// gone. A changed message alone is no new problem.
func transitionEvent(old *metav1.Condition, cur metav1.Condition) (conditionEvent, bool) {
	if !eventedConditions[cur.Type] {
		return conditionEvent{}, false
	}
	wasProblem := old != nil && old.Status == metav1.ConditionFalse && !quietReasons[old.Reason]
	switch {
	case cur.Status == metav1.ConditionFalse && !quietReasons[cur.Reason]:
		if wasProblem && old.Reason == cur.Reason {
			return conditionEvent{}, false
		}
		return conditionEvent{eventType: corev1.EventTypeWarning, reason: cur.Reason, message: cur.Message}, true
	case cur.Status == metav1.ConditionTrue && wasProblem:
		return conditionEvent{eventType: corev1.EventTypeNormal, reason: cur.Reason, message: cur.Message}, true
	}
	return conditionEvent{}, false
}

// emitConditionEvents records the Events of one written status on its object.
func emitConditionEvents(rec record.EventRecorder, obj client.Object, events []conditionEvent) {
	if rec == nil {
		return
	}
	for _, e := range events {
		rec.Event(obj, e.eventType, e.reason, e.message)
	}
}
