package controllers

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestGatherHandsOutTheSameReferencedObjectsWhileNoneChanged: two gathers with no
// referenced Secret changed in between hand out the same Secret (not a new copy), kept
// without its annotations (kubectl's copy of it among them); a changed Secret is read
// afresh, and one no longer referenced is no longer gathered.
func TestGatherHandsOutTheSameReferencedObjectsWhileNoneChanged(t *testing.T) {
	ctx := context.Background()
	ns := "gather-referenced"
	ca := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ca", Annotations: map[string]string{
		corev1.LastAppliedConfigAnnotation: `{"apiVersion":"v1","kind":"Secret","data":{"ca.crt":"b25l"}}`, "team": "payments"}},
		Data: map[string][]byte{"ca.crt": []byte("one")}}
	be := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}, Spec: egressv1alpha1.BackendSpec{
		Destination: egressv1alpha1.BackendDestination{Type: egressv1alpha1.DestinationTypeFQDN,
			FQDN: &egressv1alpha1.FQDNDestination{Hostname: "api.example.com", TLS: &egressv1alpha1.BackendTLS{
				CACertificates: []egressv1alpha1.CertificateRef{{SecretRef: egressv1alpha1.ObjectKeyReference{Name: "ca"}}}}},
			Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}}}}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, ca, be} {
		if err := api.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	g := newGatherer(api.Client, api.Client)
	gather := func() *corev1.Secret {
		t.Helper()
		res, err := g.gather(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return gatheredSecret(res, ns, "ca")
	}
	first, second := gather(), gather()
	if first == nil || first != second {
		t.Fatalf("two gathers with nothing changed: %p then %p, want the same Secret", first, second)
	}
	if first.Annotations != nil {
		t.Errorf("gathered Secret annotations = %v, want none", first.Annotations)
	}
	ca.Data["ca.crt"] = []byte("two")
	if err := api.Client.Update(ctx, ca); err != nil {
		t.Fatal(err)
	}
	if third := gather(); third == second || third == nil || string(third.Data["ca.crt"]) != "two" {
		t.Fatalf("after the Secret changed the gather handed out %+v, want its new data in a new copy", third)
	}
	if err := api.Client.Delete(ctx, be); err != nil {
		t.Fatal(err)
	}
	if fourth := gather(); fourth != nil {
		t.Fatal("a Secret no Backend references any more was still gathered")
	}
}

// gatheredSecret finds a Secret among the gathered ones, or nil.
func gatheredSecret(res *egress.Resources, ns, name string) *corev1.Secret {
	for i := range res.Secrets {
		if s := &res.Secrets[i]; s.Namespace == ns && s.Name == name {
			return s
		}
	}
	return nil
}
