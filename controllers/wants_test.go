package controllers

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// want is one thing an object's status must show: a condition (type, status, reason,
// and a message fragment) or, with check, anything else. Wants are written compactly:
//
//	on("Backend", ns, "api").is("Accepted=False/Invalid").with("tls.insecureSkipVerify")
//	on("Gateway", ns, "gw").at("http").is("Programmed=True/Programmed")
//
// at selects a Gateway's listener, or the parent (HTTPRoute) or ancestor
// (BackendTLSPolicy) entry of ours for the Gateway of that name.
type want struct {
	kind, ns, name, sub string
	typ, status, reason string
	msg                 []string
	check               func(client.Object) error
	what                string
	// transient wants need only be seen once (a state the object moves on from).
	transient bool
}

func on(kind, ns, name string) want { return want{kind: kind, ns: ns, name: name} }

func (x want) at(sub string) want { x.sub = sub; return x }

// is sets the condition: "Type=Status/Reason"; "Type=absent" for a condition that must
// not be there; "none" for an HTTPRoute or BackendTLSPolicy with no entry of ours for
// the Gateway.
func (x want) is(spec string) want {
	if spec == "none" {
		x.status = "none"
		return x
	}
	typ, rest, _ := strings.Cut(spec, "=")
	x.typ = typ
	x.status, x.reason, _ = strings.Cut(rest, "/")
	return x
}

// with requires the condition's message to contain every fragment.
func (x want) with(fragments ...string) want {
	x.msg = append(append([]string(nil), x.msg...), fragments...)
	return x
}

// where checks something beyond conditions, described by what.
func (x want) where(what string, check func(client.Object) error) want {
	x.what, x.check = what, check
	return x
}

func (x want) once() want { x.transient = true; return x }

func (x want) String() string {
	target := fmt.Sprintf("%s %s/%s", x.kind, x.ns, x.name)
	if x.ns == "" {
		target = fmt.Sprintf("%s %s", x.kind, x.name)
	}
	if x.sub != "" {
		target += " [" + x.sub + "]"
	}
	switch {
	case x.check != nil:
		return target + " " + x.what
	case x.status == "none":
		return target + " has no entry of ours"
	case x.status == "absent":
		return target + " has no " + x.typ + " condition"
	}
	s := fmt.Sprintf("%s %s=%s/%s", target, x.typ, x.status, x.reason)
	if len(x.msg) > 0 {
		s += fmt.Sprintf(" with %q", x.msg)
	}
	return s
}

// newObject returns an empty typed object of the want's kind.
func (x want) newObject() client.Object {
	switch x.kind {
	case "GatewayClass":
		return &gwapiv1.GatewayClass{}
	case "Gateway":
		return &gwapiv1.Gateway{}
	case "HTTPRoute":
		return &gwapiv1.HTTPRoute{}
	case "BackendTLSPolicy":
		return &gwapiv1.BackendTLSPolicy{}
	case "Backend":
		return &egressv1alpha1.Backend{}
	case "XBackend":
		return &gwapixv1alpha1.XBackend{}
	}
	panic("want: unknown kind " + x.kind)
}

// holds says nil when obj satisfies the want, else what it shows instead.
func (x want) holds(obj client.Object, controller gwapiv1.GatewayController) error {
	if x.check != nil {
		return x.check(obj)
	}
	conds, found, err := conditionsAt(obj, x.sub, controller)
	if err != nil {
		return err
	}
	if x.status == "none" {
		if found {
			return fmt.Errorf("an entry of ours is there: %s", condString(conds))
		}
		return nil
	}
	if !found {
		return fmt.Errorf("no status entry of ours for %q yet", x.sub)
	}
	c := findCond(conds, x.typ)
	switch {
	case x.status == "absent" && c == nil:
		return nil
	case x.status == "absent":
		return fmt.Errorf("has %s", condString(conds))
	case c == nil:
		return fmt.Errorf("no %s condition; has %s", x.typ, condString(conds))
	case string(c.Status) != x.status || c.Reason != x.reason:
		return fmt.Errorf("%s=%s/%s: %s", c.Type, c.Status, c.Reason, c.Message)
	}
	for _, m := range x.msg {
		if !strings.Contains(c.Message, m) {
			return fmt.Errorf("message %q lacks %q", c.Message, m)
		}
	}
	// The API server's default condition ("Waiting for controller") has no generation.
	if c.ObservedGeneration != obj.GetGeneration() && c.Message != "Waiting for controller" {
		return fmt.Errorf("observedGeneration %d, object generation %d", c.ObservedGeneration, obj.GetGeneration())
	}
	return nil
}

// conditionsAt returns the conditions the want looks at and whether that entry exists.
func conditionsAt(obj client.Object, sub string, controller gwapiv1.GatewayController) ([]metav1.Condition, bool, error) {
	switch o := obj.(type) {
	case *gwapiv1.GatewayClass:
		return o.Status.Conditions, true, nil
	case *egressv1alpha1.Backend:
		return o.Status.Conditions, true, nil
	case *gwapiv1.Gateway:
		if sub == "" {
			return o.Status.Conditions, true, nil
		}
		for _, l := range o.Status.Listeners {
			if string(l.Name) == sub {
				return l.Conditions, true, nil
			}
		}
		return nil, false, nil
	case *gwapiv1.HTTPRoute:
		for _, p := range o.Status.Parents {
			if p.ControllerName == controller && string(p.ParentRef.Name) == sub {
				return p.Conditions, true, nil
			}
		}
		return nil, false, nil
	case *gwapiv1.BackendTLSPolicy:
		for _, a := range o.Status.Ancestors {
			if a.ControllerName == controller && string(a.AncestorRef.Name) == sub {
				return a.Conditions, true, nil
			}
		}
		return nil, false, nil
	case *gwapixv1alpha1.XBackend:
		for _, p := range o.Status.Ancestors {
			if p.ControllerName == controller && string(p.AncestorRef.Name) == sub {
				return p.Conditions, true, nil
			}
		}
		return nil, false, nil
	}
	return nil, false, fmt.Errorf("no conditions in %T", obj)
}

func condString(conds []metav1.Condition) string {
	parts := make([]string, len(conds))
	for i, c := range conds {
		parts[i] = fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// waitWants polls until every want has held (a non-transient one must still hold at the
// end: see verifyWants) and fails listing those that never did, with what they showed.
func waitWants(t *testing.T, w *world, wants []want, timeout time.Duration) {
	t.Helper()
	met := make([]bool, len(wants))
	last := make([]error, len(wants))
	deadline := time.Now().Add(timeout)
	for {
		objs := map[string]client.Object{}
		pending := 0
		for i, x := range wants {
			if met[i] {
				continue
			}
			obj, err := fetch(w.c, x, objs)
			if err == nil {
				err = x.holds(obj, w.controller)
			}
			last[i], met[i] = err, err == nil
			if !met[i] {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			for i, x := range wants {
				if !met[i] {
					t.Errorf("after %v: want %s; %v", timeout, x, last[i])
				}
			}
			t.FailNow()
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// verifyWants checks, once, that every non-transient want holds now.
func verifyWants(t *testing.T, w *world, wants []want) {
	t.Helper()
	objs := map[string]client.Object{}
	for _, x := range wants {
		if x.transient {
			continue
		}
		obj, err := fetch(w.c, x, objs)
		if err == nil {
			err = x.holds(obj, w.controller)
		}
		if err != nil {
			t.Errorf("no longer: %s; %v", x, err)
		}
	}
}

// fetch reads the want's object, once per poll (memo).
func fetch(c client.Client, x want, memo map[string]client.Object) (client.Object, error) {
	key := x.kind + "/" + x.ns + "/" + x.name
	if obj, ok := memo[key]; ok {
		return obj, nil
	}
	obj := x.newObject()
	if err := c.Get(context.Background(), types.NamespacedName{Namespace: x.ns, Name: x.name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s not found", key)
		}
		return nil, err
	}
	memo[key] = obj
	return obj, nil
}
