package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/translate"
)

func TestSameListIsTheSameMemory(t *testing.T) {
	a := []int{1, 2, 3}
	tests := []struct {
		name string
		x, y []int
		want bool
	}{
		{"a list handed out again", a, a, true},
		{"a copy with the same contents", a, slices.Clone(a), false},
		{"the same memory, shorter", a, a[:2], false},
		{"two empty lists", nil, []int{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := sameList(tt.x, tt.y); got != tt.want {
				t.Errorf("sameList = %v, want %v", got, tt.want)
			}
		})
	}
}

func fqdnBackend(name, host, caSecret string) egressv1alpha1.Backend {
	b := egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "apps"}}
	b.Spec.Destination.Type = egressv1alpha1.DestinationTypeFQDN
	b.Spec.Destination.FQDN = &egressv1alpha1.FQDNDestination{Hostname: host,
		TLS: &egressv1alpha1.BackendTLS{CACertificates: []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: caSecret}}}}}
	return b
}

func TestWalksAreRedoneOnlyForNewLists(t *testing.T) {
	res := &egress.Resources{Backends: []*egressv1alpha1.Backend{ptr.To(fqdnBackend("a", "A.example.com", "ca-a"))}}
	var names namesWalk
	var refs referencesWalk

	got, same := names.names(res, listPatch{})
	if same || !slices.Equal(got, []string{"a.example.com"}) {
		t.Fatalf("first walk = %v, same %v; want [a.example.com], not same", got, same)
	}
	firstRefs := refs.references(res, listPatch{})
	if want := translate.References(res); !slices.Equal(firstRefs, want) {
		t.Fatalf("references = %v, want %v", firstRefs, want)
	}

	// Only another kind changed: the Backends are the list handed out again.
	again := &egress.Resources{Backends: res.Backends, HTTPRoutes: []*gwapiv1.HTTPRoute{{}}}
	if got, same := names.names(again, listPatch{}); !same || !slices.Equal(got, []string{"a.example.com"}) {
		t.Errorf("walk of the same lists = %v, same %v; want the last, same", got, same)
	}
	if got := refs.references(again, listPatch{}); &got[0] != &firstRefs[0] {
		t.Error("the references of the same lists were walked again")
	}

	// A new Backend list (an event of the kind came): walked again.
	changed := &egress.Resources{Backends: append(slices.Clone(res.Backends), ptr.To(fqdnBackend("b", "b.example.com", "ca-b")))}
	changed.Services = []corev1.Service{{ObjectMeta: metav1.ObjectMeta{Name: "ext", Namespace: "apps"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "ext.example.com."}}}
	if got, same := names.names(changed, listPatch{}); same || !slices.Equal(got, []string{"a.example.com", "b.example.com", "ext.example.com"}) {
		t.Errorf("walk of a new list = %v, same %v; want all three names, not same", got, same)
	}
	if got, want := refs.references(changed, listPatch{}), translate.References(changed); !slices.Equal(got, want) || len(got) != 2 {
		t.Errorf("references of a new list = %v, want %v (two Secrets)", got, want)
	}
}
