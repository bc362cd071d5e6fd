package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// backendsQuota is the resource the README's ResourceQuota counts Backends by.
const backendsQuota = corev1.ResourceName("count/backends.egress.portcullis.io")

// TestREADMEQuotaBoundsATenantsBackends applies the ResourceQuota of the README's
// Security section as written, gives it the status the quota controller would (the test
// API server runs none, and the API server refuses every counted create while a quota
// has no status), and creates Backends in its namespace: as many as the quota allows
// are created, and the next is refused with "exceeded quota".
func TestREADMEQuotaBoundsATenantsBackends(t *testing.T) {
	api := startAPIServer(t)
	ctx := context.Background()
	quota := readmeQuota(t)
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: quota.Namespace}}); err != nil {
		t.Fatal(err)
	}
	if err := api.Client.Create(ctx, quota); err != nil {
		t.Fatalf("creating the README's ResourceQuota: %v", err)
	}
	quota.Status.Hard = quota.Spec.Hard
	quota.Status.Used = corev1.ResourceList{}
	for name := range quota.Spec.Hard {
		quota.Status.Used[name] = resource.MustParse("0")
	}
	if err := api.Client.Status().Update(ctx, quota); err != nil {
		t.Fatal(err)
	}
	limit, ok := quota.Spec.Hard[backendsQuota]
	if !ok {
		t.Fatalf("the README's ResourceQuota does not count %s", backendsQuota)
	}
	for i := range int(limit.Value()) {
		if err := api.Client.Create(ctx, quotaBackend(quota.Namespace, i)); err != nil {
			t.Fatalf("Backend %d of %d allowed was refused: %v", i+1, limit.Value(), err)
		}
	}
	err := api.Client.Create(ctx, quotaBackend(quota.Namespace, int(limit.Value())))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("Backend %d past the quota: got %v, want Forbidden, exceeded quota", limit.Value()+1, err)
	}
}

// readmeQuota is the ResourceQuota in the README's Security section.
func readmeQuota(t *testing.T) *corev1.ResourceQuota {
	t.Helper()
	for _, block := range fencedBlocks(readmeSection(t, "## Security"), "yaml") {
		if !strings.Contains(block, "kind: ResourceQuota") {
			continue
		}
		q := &corev1.ResourceQuota{}
		if err := yaml.UnmarshalStrict([]byte(block), q); err != nil {
			t.Fatalf("the README's ResourceQuota: %v", err)
		}
		return q
	}
	t.Fatal("the README's Security section shows no ResourceQuota")
	return nil
}

// quotaBackend is a valid Backend, the i-th of a namespace.
func quotaBackend(ns string, i int) *egressv1alpha1.Backend {
	b := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("api-%d", i), Namespace: ns}}
	b.Spec.Destination = egressv1alpha1.BackendDestination{
		Type:  egressv1alpha1.DestinationTypeFQDN,
		FQDN:  &egressv1alpha1.FQDNDestination{Hostname: fmt.Sprintf("api-%d.example.com", i)},
		Ports: []egressv1alpha1.BackendPort{{Name: "https", Port: 443, Protocol: egressv1alpha1.PortProtocolHTTPS}},
	}
	return b
}
