//go:build cluster

package cluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/controllers/xdscerts"
)

// rotationArgs shorten the xDS certificates' lives so a rotation happens within the
// test: a 45 s certificate is renewed 30 s after its issue, checked every 3 s. The
// shorter lifetime also applies to the certificates already issued.
var rotationArgs = []string{"--xds-cert-lifetime=45s", "--xds-cert-check-interval=3s"}

// expectCertificateRotation restarts the manager with short certificate lifetimes while
// a client pod keeps sending requests, waits until the xDS server certificate and the
// Gateway's Envoy client certificate have both been replaced and the Envoy pods rolled
// onto the new one, checks no request failed, and puts the manager's arguments back.
func (k *cluster) expectCertificateRotation(t *testing.T, client corev1.Pod, gwURL string) {
	original := k.managerArgs(t)
	t.Cleanup(func() { k.setManagerArgs(t, original) })
	serverBefore := k.secretCert(t, managerNS, xdscerts.ServerSecretName)
	clientBefore := k.secretCert(t, gatewayNS, xdscerts.EnvoyClientSecretName)
	podsBefore := k.envoyPodNames(t)

	load := startLoad(client, gwURL)
	start := time.Now()
	k.setManagerArgs(t, append(slices.Clone(original), rotationArgs...))
	eventually(t, 3*time.Minute, "the xDS server and Envoy client certificates replaced and the Envoy pods rolled onto the new one", func() error {
		if bytes.Equal(k.secretCert(t, managerNS, xdscerts.ServerSecretName), serverBefore) {
			return fmt.Errorf("the xDS server certificate is unchanged")
		}
		if bytes.Equal(k.secretCert(t, gatewayNS, xdscerts.EnvoyClientSecretName), clientBefore) {
			return fmt.Errorf("the Envoy client certificate is unchanged")
		}
		return k.envoyRolledFrom(t, podsBefore)
	})
	t.Logf("certificates rotated and Envoy pods replaced %s after the manager got %v", time.Since(start).Round(time.Second), rotationArgs)
	time.Sleep(5 * time.Second) // requests keep flowing on the new pods and certificates
	ok, failures := load.stop()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during the rotation, first: %s", len(failures), ok+len(failures), failures[0])
	}
	if ok < 50 {
		t.Fatalf("only %d requests were sent during the rotation; the test proves nothing", ok)
	}
	t.Logf("%d requests, none failed, across the rotation", ok)
}

func (k *cluster) managerDeployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k.c.Get(t.Context(), keyOf(managerNS, "portcullis-controller-manager"), d); err != nil {
		t.Fatal(err)
	}
	return d
}

func (k *cluster) managerArgs(t *testing.T) []string {
	t.Helper()
	return slices.Clone(k.managerDeployment(t).Spec.Template.Spec.Containers[0].Args)
}

// setManagerArgs replaces the manager container's arguments and waits for the rollout.
func (k *cluster) setManagerArgs(t *testing.T, args []string) {
	t.Helper()
	patch, err := json.Marshal([]map[string]any{{"op": "replace", "path": "/spec/template/spec/containers/0/args", "value": args}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.kubectl("-n", managerNS, "patch", "deployment/portcullis-controller-manager", "--type=json", "-p", string(patch)); err != nil {
		t.Fatal(err)
	}
	if _, err := k.kubectl("-n", managerNS, "rollout", "status", "deployment/portcullis-controller-manager", "--timeout=3m"); err != nil {
		t.Fatal(err)
	}
}

func (k *cluster) secretCert(t *testing.T, namespace, name string) []byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := k.c.Get(t.Context(), keyOf(namespace, name), s); err != nil {
		t.Fatal(err)
	}
	return s.Data[xdscerts.CertKey]
}

func (k *cluster) envoyPodNames(t *testing.T) []string {
	t.Helper()
	var names []string
	for _, p := range k.waitPodsReady(gatewayNS, labels.SelectorFromSet(infra.SelectorLabels(gatewayNS, gatewayName)).String()) {
		names = append(names, p.Name)
	}
	return names
}

// envoyRolledFrom is nil once every Ready Envoy pod is new and the Deployment has
// finished rolling.
func (k *cluster) envoyRolledFrom(t *testing.T, before []string) error {
	d := &appsv1.Deployment{}
	if err := k.c.Get(t.Context(), keyOf(gatewayNS, infra.ResourceName(gatewayName)), d); err != nil {
		return err
	}
	if d.Status.UpdatedReplicas != *d.Spec.Replicas || d.Status.ReadyReplicas != *d.Spec.Replicas || d.Status.Replicas != *d.Spec.Replicas {
		return fmt.Errorf("the Envoy Deployment is rolling: %d updated, %d ready, %d in all", d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.Replicas)
	}
	var pods corev1.PodList
	if err := k.c.List(t.Context(), &pods, ctrlclient.InNamespace(gatewayNS), ctrlclient.MatchingLabels(infra.SelectorLabels(gatewayNS, gatewayName))); err != nil {
		return err
	}
	for _, p := range pods.Items {
		if slices.Contains(before, p.Name) {
			return fmt.Errorf("Envoy pod %s from before the rotation still runs", p.Name)
		}
	}
	return nil
}
