package bench

import (
	"fmt"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/portcullis-io/portcullis/controllers"
)

// Tenants of the generated workloads (the README's "Tenancy"): caller namespaces holding
// Backends and HTTPRoutes, and the running pods whose addresses identify callers.

// tenantNamespace names the n-th tenant namespace.
func tenantNamespace(n int) string { return fmt.Sprintf("tenant-%d", n) }

// namespaceOf is the namespace of the k-th Backend, HTTPRoute or pod: round-robin over
// the tenant namespaces, appsNS when the workload has none.
func (w workload) namespaceOf(k int) string {
	if w.namespaces == 0 {
		return appsNS
	}
	return tenantNamespace(k % w.namespaces)
}

// callerPods are the workload's running pods.
func (w workload) callerPods() []corev1.Pod {
	out := make([]corev1.Pod, w.pods)
	for k := range out {
		out[k] = callerPod(w.namespaceOf(k), fmt.Sprintf("pod-%d", k), podIP(k))
	}
	return out
}

// podIP is a distinct cluster address (10.x.y.z) per index.
func podIP(k int) netip.Addr {
	k++ // not 10.0.0.0
	return netip.AddrFrom4([4]byte{10, byte(k >> 16), byte(k >> 8), byte(k)})
}

// callerPod is a running pod holding ip, as the kubelet reports it, reduced to what the
// manager's cache keeps of it (controllers.PodCacheOptions): translation reads pods in
// that form, and their memory is that form's.
func callerPod(ns, name string, ip netip.Addr) corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "/" + name), ResourceVersion: "1",
			Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{ServiceAccountName: "app", Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip.String(), PodIPs: []corev1.PodIP{{IP: ip.String()}},
			HostIP: "192.0.2.1"},
	}
	reduced, err := controllers.PodCacheOptions().Transform(p)
	if err != nil {
		panic(err) // the transform never fails on a Pod
	}
	return *reduced.(*corev1.Pod)
}
