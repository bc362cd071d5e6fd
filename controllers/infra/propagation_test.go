package infra

import (
	"context"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// TestKubernetesPropagatesInfrastructure: spec.infrastructure labels and annotations
// reach every object made for the Gateway, with Portcullis' own winning a clash, but
// not the Envoy pods (a label could make another NetworkPolicy select them, an
// annotation attach a network or sidecar); a label dropped from the Gateway leaves.
func TestKubernetesPropagatesInfrastructure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	certs, _ := xdsCerts(t)
	k := newKubernetes(t, certs)
	gw := testGateway(ns)
	gw.Labels = map[string]string{"team": "payments", "app.kubernetes.io/name": "hijack"}
	gw.Annotations = map[string]string{"example.com/owner": "platform", "k8s.v1.cni.cncf.io/networks": "bypass"}
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
	if !maps.Equal(pod.Labels, wantObjectLabels(ns, gw.Name)) {
		t.Errorf("pod labels = %v, want only Portcullis' %v", pod.Labels, wantObjectLabels(ns, gw.Name))
	}
	for _, key := range []string{"example.com/owner", "k8s.v1.cni.cncf.io/networks"} {
		if v, ok := pod.Annotations[key]; ok {
			t.Errorf("pod annotation %s = %q; spec.infrastructure must stay off the pods", key, v)
		}
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
