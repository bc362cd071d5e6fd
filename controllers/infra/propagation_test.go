package infra

import (
	"context"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestKubernetesPropagatesInfrastructure: spec.infrastructure labels and annotations
// reach every object made for the Gateway and the Envoy pods; Portcullis' own labels
// and annotations win a clash; a label dropped from the Gateway leaves the objects.
func TestKubernetesPropagatesInfrastructure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	certs, _ := xdsCerts(t)
	k := newKubernetes(t, certs)
	gw := testGateway(ns)
	gw.Labels = map[string]string{"team": "payments", "app.kubernetes.io/name": "hijack"}
	gw.Annotations = map[string]string{"example.com/owner": "platform", AnnotationBootstrapHash: "hijack"}
	if _, err := k.Ensure(ctx, gw); err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, ns, gw.Name)
	wantLabels := maps.Clone(Labels(ns, gw.Name))
	wantLabels["team"] = "payments"
	wantLabels[LabelGatewayAPIName] = gw.Name
	type meta interface {
		GetLabels() map[string]string
		GetAnnotations() map[string]string
	}
	var all []meta
	for _, obj := range objs.list() {
		all = append(all, obj)
	}
	all = append(all, &objs.dep.Spec.Template) // the Envoy pods
	for _, obj := range all {
		if !maps.Equal(obj.GetLabels(), wantLabels) {
			t.Errorf("%T labels = %v, want %v", obj, obj.GetLabels(), wantLabels)
		}
		if got := obj.GetAnnotations()["example.com/owner"]; got != "platform" {
			t.Errorf("%T annotation example.com/owner = %q, want platform", obj, got)
		}
	}
	if got := objs.dep.Spec.Template.Annotations[AnnotationBootstrapHash]; got == "hijack" || got == "" {
		t.Errorf("pod bootstrap hash annotation = %q; Portcullis' value must win", got)
	}

	gw.Labels = nil
	if _, err := k.Ensure(ctx, gw); err != nil {
		t.Fatal(err)
	}
	objs = readObjects(t, ns, gw.Name)
	for _, obj := range objs.list() {
		if _, ok := obj.GetLabels()["team"]; ok {
			t.Errorf("%T keeps label team after the Gateway dropped it: %v", obj, obj.GetLabels())
		}
	}
}

// TestGatewayOfTakesInfrastructure: the provider gets spec.infrastructure's labels and
// annotations as plain maps, and nothing when the Gateway has none.
func TestGatewayOfTakesInfrastructure(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}
	if got := GatewayOf(gw); got.Labels != nil || got.Annotations != nil {
		t.Fatalf("no infrastructure gave labels %v, annotations %v", got.Labels, got.Annotations)
	}
	gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{
		Labels:      map[gwapiv1.LabelKey]gwapiv1.LabelValue{"team": "payments"},
		Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"example.com/owner": "platform"},
	}
	got := GatewayOf(gw)
	if !maps.Equal(got.Labels, map[string]string{"team": "payments"}) || !maps.Equal(got.Annotations, map[string]string{"example.com/owner": "platform"}) {
		t.Fatalf("labels %v, annotations %v", got.Labels, got.Annotations)
	}
}
