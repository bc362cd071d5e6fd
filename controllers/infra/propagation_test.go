package infra

import (
	"context"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestKubernetesPropagatesInfrastructure: spec.infrastructure labels and annotations
// reach every object made for the Gateway, its Envoy pods included (GEP-1867), with
// Portcullis' own winning a clash: a Gateway cannot relabel its pods out of their
// Deployment or into another Gateway's policies. A label dropped from the Gateway
// leaves.
func TestKubernetesPropagatesInfrastructure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	certs, _ := xdsCerts(t)
	k := newKubernetes(t, certs)
	gw := testGateway(ns)
	gw.Labels = map[string]string{"team": "payments", LabelName: "hijack", LabelGatewayName: "other"}
	gw.Annotations = map[string]string{"example.com/owner": "platform", AnnotationBootstrapHash: "forged"}
	if _, err := k.Ensure(ctx, gw); err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, ns, gw.Name)
	wantLabels := wantObjectLabels(ns, gw.Name)
	wantLabels["team"] = "payments"
	for _, obj := range objs.list() {
		if !maps.Equal(obj.GetLabels(), wantLabels) {
			t.Errorf("%T labels = %v, want %v", obj, obj.GetLabels(), wantLabels)
		}
		if got := obj.GetAnnotations()["example.com/owner"]; got != "platform" {
			t.Errorf("%T annotation example.com/owner = %q, want platform", obj, got)
		}
	}
	pod := objs.dep.Spec.Template
	if !maps.Equal(pod.Labels, wantLabels) {
		t.Errorf("pod labels = %v, want %v", pod.Labels, wantLabels)
	}
	if got := pod.Annotations["example.com/owner"]; got != "platform" {
		t.Errorf("pod annotation example.com/owner = %q, want platform", got)
	}
	if got := pod.Annotations[AnnotationBootstrapHash]; got == "forged" || got == "" {
		t.Errorf("pod annotation %s = %q, want Portcullis' own hash", AnnotationBootstrapHash, got)
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

// TestGatewayOfDropsPodAlteringKeys: keys that would let another system rewire the Envoy
// pods never reach the provider, even if the translator's refusal were bypassed.
func TestGatewayOfDropsPodAlteringKeys(t *testing.T) {
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}
	gw.Spec.Infrastructure = &gwapiv1.GatewayInfrastructure{
		Labels:      map[gwapiv1.LabelKey]gwapiv1.LabelValue{"istio-injection": "enabled", "team": "payments"},
		Annotations: map[gwapiv1.AnnotationKey]gwapiv1.AnnotationValue{"k8s.v1.cni.cncf.io/networks": "bypass"},
	}
	got := GatewayOf(gw)
	if !maps.Equal(got.Labels, map[string]string{"team": "payments"}) || got.Annotations != nil {
		t.Fatalf("labels %v, annotations %v; want only team=payments", got.Labels, got.Annotations)
	}
}
