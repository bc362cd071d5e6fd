package deploy

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// podSpecPaths says where each workload kind keeps the spec of the pods it runs.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// containerCheck is one property every container of every pod must have, given the
// container and the pod-level security context it inherits from.
type containerCheck struct {
	want string
	ok   func(c *corev1.SecurityContext, pod *corev1.PodSecurityContext) bool
}

var containerChecks = []containerCheck{
	{"runs as non-root (runAsNonRoot: true, on the container or the pod)", func(c *corev1.SecurityContext, pod *corev1.PodSecurityContext) bool {
		if c != nil && c.RunAsNonRoot != nil {
			return *c.RunAsNonRoot
		}
		return pod != nil && pod.RunAsNonRoot != nil && *pod.RunAsNonRoot
	}},
	{"does not name UID 0 in runAsUser", func(c *corev1.SecurityContext, pod *corev1.PodSecurityContext) bool {
		if c != nil && c.RunAsUser != nil {
			return *c.RunAsUser != 0
		}
		return pod == nil || pod.RunAsUser == nil || *pod.RunAsUser != 0
	}},
	{"has a read-only root filesystem", func(c *corev1.SecurityContext, _ *corev1.PodSecurityContext) bool {
		return c != nil && c.ReadOnlyRootFilesystem != nil && *c.ReadOnlyRootFilesystem
	}},
	{"drops ALL capabilities and adds none", func(c *corev1.SecurityContext, _ *corev1.PodSecurityContext) bool {
		return c != nil && c.Capabilities != nil && slices.Contains(c.Capabilities.Drop, "ALL") && len(c.Capabilities.Add) == 0
	}},
	{"forbids privilege escalation", func(c *corev1.SecurityContext, _ *corev1.PodSecurityContext) bool {
		return c != nil && c.AllowPrivilegeEscalation != nil && !*c.AllowPrivilegeEscalation
	}},
	{"is not privileged", func(c *corev1.SecurityContext, _ *corev1.PodSecurityContext) bool {
		return c == nil || c.Privileged == nil || !*c.Privileged
	}},
	{"has seccomp profile RuntimeDefault (on the container or the pod)", func(c *corev1.SecurityContext, pod *corev1.PodSecurityContext) bool {
		if c != nil && c.SeccompProfile != nil {
			return c.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		}
		return pod != nil && pod.SeccompProfile != nil && pod.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
	}},
}

// TestWorkloadsAreHardened checks every container (init containers too) of every pod
// template config/default renders against containerChecks.
func TestWorkloadsAreHardened(t *testing.T) {
	workloads := 0
	for _, o := range defaultObjects(t) {
		spec, ok := podSpec(t, o)
		if !ok {
			continue
		}
		workloads++
		if spec.HostNetwork || spec.HostPID || spec.HostIPC {
			t.Errorf("%s: shares the node's network, PID or IPC namespace", describe(o))
		}
		containers := append(slices.Clone(spec.InitContainers), spec.Containers...)
		if len(containers) == 0 {
			t.Errorf("%s: no containers", describe(o))
		}
		for _, c := range containers {
			for _, check := range containerChecks {
				if !check.ok(c.SecurityContext, spec.SecurityContext) {
					t.Errorf("%s: container %q: want it %s", describe(o), c.Name, check.want)
				}
			}
		}
	}
	if workloads == 0 {
		t.Fatal("config/default renders no workload; the checks above checked nothing")
	}
}

// podSpec returns the pod spec of a workload object, or false for other kinds.
func podSpec(t *testing.T, o *unstructured.Unstructured) (*corev1.PodSpec, bool) {
	t.Helper()
	path, ok := podSpecPaths[o.GetKind()]
	if !ok {
		return nil, false
	}
	m, found, err := unstructured.NestedMap(o.Object, path...)
	if err != nil || !found {
		t.Fatalf("%s: no pod spec at %v: %v", describe(o), path, err)
	}
	spec := &corev1.PodSpec{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, spec); err != nil {
		t.Fatalf("%s: %v", describe(o), err)
	}
	return spec, true
}
