package deploy

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestDefaultKustomizationIsAcceptedByTheAPIServer applies what 'make deploy' applies.
// The Namespace and the CRDs go in for real (the dry run of namespaced objects needs
// the namespace, and a CRD is only proven by becoming Established); then the whole
// output, CRDs included a second time as on a redeploy, goes in with a server-side dry
// run, which runs validation, defaulting and admission (Pod Security included) without
// persisting anything.
func TestDefaultKustomizationIsAcceptedByTheAPIServer(t *testing.T) {
	objs := defaultObjects(t)
	api := startAPIServer(t)
	kubeconfig, err := api.Kubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	var prerequisites []*unstructured.Unstructured
	var crds []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Namespace":
			prerequisites = append(prerequisites, o)
		case "CustomResourceDefinition":
			prerequisites = append(prerequisites, o)
			crds = append(crds, "customresourcedefinition/"+o.GetName())
		}
	}
	if len(crds) < 2 {
		t.Fatalf("config/default renders %d CRDs; want ours and the Gateway API ones", len(crds))
	}
	applyServerSide(t, kubeconfig, prerequisites)
	if _, stderr, err := kubectl(t, nil, append([]string{"--kubeconfig", kubeconfig,
		"wait", "--for=condition=Established", "--timeout=60s"}, crds...)...); err != nil {
		t.Fatalf("CRDs not Established: %v\n%s", err, stderr)
	}

	applyServerSide(t, kubeconfig, objs, "--dry-run=server")
}

// applyServerSide runs 'kubectl apply --server-side' on objs (with extra flags) and fails
// on an error or any warning the API server returns (e.g. from Pod Security admission).
func applyServerSide(t *testing.T, kubeconfig string, objs []*unstructured.Unstructured, extra ...string) {
	t.Helper()
	args := append([]string{"--kubeconfig", kubeconfig, "apply", "--server-side", "-f", "-"}, extra...)
	stdout, stderr, err := kubectl(t, encodeObjects(t, objs), args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args[2:], " "), err, stdout, stderr)
	}
	if strings.Contains(stderr, "Warning:") {
		t.Errorf("kubectl %s: the API server warned:\n%s", strings.Join(args[2:], " "), stderr)
	}
	t.Logf("kubectl %s:\n%s", strings.Join(args[2:], " "), stdout)
}

// TestManagerPodPassesRestrictedPodSecurity creates (dry run) a Pod from every
// Deployment's template in portcullis-system, whose Namespace enforces the restricted
// Pod Security Standard; Deployments themselves only draw warnings, Pods are refused.
// A Pod with no security context is refused first, to show the enforcement is on.
func TestManagerPodPassesRestrictedPodSecurity(t *testing.T) {
	objs := defaultObjects(t)
	api := startAPIServer(t)
	ctx := t.Context()
	for _, ns := range objectsOfKind[corev1.Namespace](t, objs, "Namespace") {
		ns.ResourceVersion = ""
		if err := api.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}

	unhardened := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "unhardened", Namespace: systemNamespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if err := api.Client.Create(ctx, unhardened, client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Fatalf("a Pod with no security context in %s: got %v, want Forbidden by Pod Security admission", systemNamespace, err)
	}

	deployments := objectsOfKind[appsv1.Deployment](t, objs, "Deployment")
	if len(deployments) == 0 {
		t.Fatal("config/default renders no Deployment")
	}
	for _, d := range deployments {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-template", Namespace: d.Namespace, Labels: d.Spec.Template.Labels},
			Spec:       d.Spec.Template.Spec,
		}
		if err := api.Client.Create(ctx, pod, client.DryRunAll); err != nil {
			t.Errorf("Deployment %s/%s: a Pod from its template is refused: %v", d.Namespace, d.Name, err)
		}
	}
}

// TestObjectsCarryTheRightNamespace asks the API server which kinds are namespaced:
// those must be in portcullis-system, the cluster-scoped ones must carry no namespace
// (kustomize stamps one onto kinds its built-in schema does not know).
func TestObjectsCarryTheRightNamespace(t *testing.T) {
	objs := defaultObjects(t)
	api := startAPIServer(t)
	mapper := api.Client.RESTMapper()
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Errorf("%s: the API server does not serve %s: %v", describe(o), gvk, err)
			continue
		}
		namespaced := mapping.Scope.Name() == meta.RESTScopeNameNamespace
		switch {
		case namespaced && o.GetNamespace() != systemNamespace:
			t.Errorf("%s: namespaced, want namespace %s", describe(o), systemNamespace)
		case !namespaced && o.GetNamespace() != "":
			t.Errorf("%s: cluster-scoped, but carries namespace %q", describe(o), o.GetNamespace())
		}
	}
}
