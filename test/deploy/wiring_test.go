package deploy

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/portcullis-io/portcullis/controllers"
)

// The contract between config/ and 'portcullis manager'.
const (
	managerName   = "portcullis-controller-manager"
	managerImage  = "ghcr.io/portcullis-io/portcullis:latest"
	xdsService    = "portcullis-xds"
	xdsPort       = 18000
	metricsPort   = 8443
	healthPort    = 8081
	envoyPodLabel = "portcullis-envoy" // app.kubernetes.io/name of the Envoy pods
)

// manager is the manager Deployment's pod as the other objects see it.
type manager struct {
	labels    labels.Set
	container corev1.Container
	ports     map[string]int32 // container port name -> number
	spec      corev1.PodSpec
}

func findManager(t *testing.T, objs []*unstructured.Unstructured) manager {
	t.Helper()
	for _, d := range objectsOfKind[appsv1.Deployment](t, objs, "Deployment") {
		if d.Name != managerName {
			continue
		}
		for _, c := range d.Spec.Template.Spec.Containers {
			if c.Name == "manager" {
				m := manager{labels: d.Spec.Template.Labels, container: c, ports: map[string]int32{}, spec: d.Spec.Template.Spec}
				for _, p := range c.Ports {
					m.ports[p.Name] = p.ContainerPort
				}
				return m
			}
		}
		t.Fatalf("Deployment %s has no container named manager", managerName)
	}
	t.Fatalf("config/default renders no Deployment %s", managerName)
	return manager{}
}

// resolve returns the container port a Service targetPort or probe port names.
func (m manager) resolve(port intstr.IntOrString) (int32, error) {
	if port.Type == intstr.String {
		n, ok := m.ports[port.StrVal]
		if !ok {
			return 0, fmt.Errorf("no container port named %q", port.StrVal)
		}
		return n, nil
	}
	for _, n := range m.ports {
		if n == port.IntVal {
			return n, nil
		}
	}
	return 0, fmt.Errorf("no container port %d", port.IntVal)
}

// flags returns the manager's --name=value flags (a bare --name maps to "true").
func (m manager) flags(t *testing.T) map[string]string {
	t.Helper()
	args := m.container.Args
	if len(args) == 0 || args[0] != "manager" {
		t.Fatalf("manager container args %v: want the 'manager' subcommand first", args)
	}
	flags := map[string]string{}
	for _, a := range args[1:] {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !hasValue {
			value = "true"
		}
		flags[name] = value
	}
	return flags
}

// TestManagerFlagsMatchItsPorts pins the flags 'portcullis manager' is started with to
// the ports, probes and environment the Deployment declares.
func TestManagerFlagsMatchItsPorts(t *testing.T) {
	m := findManager(t, defaultObjects(t))
	flags := m.flags(t)
	if m.container.Image != managerImage {
		t.Errorf("manager image %q, want %q", m.container.Image, managerImage)
	}
	for _, tc := range []struct {
		flag, value string // the flag and its value
		port        string // the container port it opens
		number      int32
	}{
		{"metrics-bind-address", ":" + strconv.Itoa(metricsPort), "https", metricsPort},
		{"health-probe-bind-address", ":" + strconv.Itoa(healthPort), "health", healthPort},
		{"xds-port", strconv.Itoa(xdsPort), "grpc-xds", xdsPort},
	} {
		if flags[tc.flag] != tc.value {
			t.Errorf("--%s=%q, want %q", tc.flag, flags[tc.flag], tc.value)
		}
		if m.ports[tc.port] != tc.number {
			t.Errorf("container port %q is %d, want %d to match --%s", tc.port, m.ports[tc.port], tc.number, tc.flag)
		}
	}
	if flags["leader-elect"] != "true" {
		t.Errorf("--leader-elect is not set")
	}
	if flags["namespace"] != "$(POD_NAMESPACE)" {
		t.Errorf("--namespace=%q, want $(POD_NAMESPACE)", flags["namespace"])
	}
	podNamespace := false
	for _, e := range m.container.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			podNamespace = true
		}
	}
	if !podNamespace {
		t.Errorf("env POD_NAMESPACE does not come from the downward API (fieldRef metadata.namespace)")
	}
	for _, probe := range []struct {
		name  string
		probe *corev1.Probe
		path  string
	}{{"liveness", m.container.LivenessProbe, "/healthz"}, {"readiness", m.container.ReadinessProbe, "/readyz"}} {
		if probe.probe == nil || probe.probe.HTTPGet == nil {
			t.Errorf("%s probe: want an HTTP GET of %s", probe.name, probe.path)
			continue
		}
		port, err := m.resolve(probe.probe.HTTPGet.Port)
		if probe.probe.HTTPGet.Path != probe.path || err != nil || port != healthPort {
			t.Errorf("%s probe GETs %s on port %v (%d, %v), want %s on %d",
				probe.name, probe.probe.HTTPGet.Path, probe.probe.HTTPGet.Port.String(), port, err, probe.path, healthPort)
		}
	}
}

// TestServicesAndPoliciesReachTheManager checks that the Services and NetworkPolicies
// select the manager's pods and name ports it listens on.
func TestServicesAndPoliciesReachTheManager(t *testing.T) {
	objs := defaultObjects(t)
	m := findManager(t, objs)

	servicePorts := map[string]int32{} // Service name -> its port
	for _, svc := range objectsOfKind[corev1.Service](t, objs, "Service") {
		if !labels.SelectorFromSet(svc.Spec.Selector).Matches(m.labels) || len(svc.Spec.Selector) == 0 {
			t.Errorf("Service %s: selector %v does not select the manager pods %v", svc.Name, svc.Spec.Selector, m.labels)
		}
		for _, p := range svc.Spec.Ports {
			if target, err := m.resolve(p.TargetPort); err != nil || target != p.Port {
				t.Errorf("Service %s port %d: targetPort %s: %d, %v", svc.Name, p.Port, p.TargetPort.String(), target, err)
			}
			servicePorts[svc.Name] = p.Port
		}
	}
	if servicePorts[xdsService] != xdsPort {
		t.Errorf("Service %s: port %d, want %d", xdsService, servicePorts[xdsService], xdsPort)
	}
	if !hasServicePort(t, objs, metricsPort, "https") {
		t.Errorf("no Service port %d named https for the metrics", metricsPort)
	}

	allowed := map[int32]string{} // port -> the peer allowed to reach it
	for _, np := range objectsOfKind[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy") {
		sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
		if err != nil || !sel.Matches(m.labels) || sel.Empty() {
			t.Errorf("NetworkPolicy %s: podSelector does not select the manager pods (%v)", np.Name, err)
		}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if _, err := m.resolve(*p.Port); err != nil {
					t.Errorf("NetworkPolicy %s: port %s: %v", np.Name, p.Port.String(), err)
				}
				for _, peer := range rule.From {
					allowed[p.Port.IntVal] = peerString(peer)
				}
			}
		}
	}
	for port, want := range map[int32]string{
		xdsPort:     "namespaces {} pods app.kubernetes.io/name=" + envoyPodLabel,
		metricsPort: "namespaces metrics=enabled pods <nil>",
	} {
		if allowed[port] != want {
			t.Errorf("ingress to port %d allowed from %q, want %q", port, allowed[port], want)
		}
	}
}

func hasServicePort(t *testing.T, objs []*unstructured.Unstructured, port int32, name string) bool {
	for _, svc := range objectsOfKind[corev1.Service](t, objs, "Service") {
		for _, p := range svc.Spec.Ports {
			if p.Port == port && p.Name == name {
				return true
			}
		}
	}
	return false
}

func peerString(peer networkingv1.NetworkPolicyPeer) string {
	selector := func(s *metav1.LabelSelector) string {
		if s == nil {
			return "<nil>"
		}
		if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
			return "{}"
		}
		return metav1.FormatLabelSelector(s)
	}
	return "namespaces " + selector(peer.NamespaceSelector) + " pods " + selector(peer.PodSelector)
}

// TestRBACBindsTheManager checks that every binding names a role and ServiceAccount the
// output defines, and that the manager's ServiceAccount gets the roles it needs.
func TestRBACBindsTheManager(t *testing.T) {
	objs := defaultObjects(t)
	m := findManager(t, objs)
	defined := map[string]bool{}
	for _, o := range objs {
		defined[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = true
	}
	if !defined["ServiceAccount/"+systemNamespace+"/"+m.spec.ServiceAccountName] {
		t.Errorf("the manager runs as ServiceAccount %q, which config/default does not define", m.spec.ServiceAccountName)
	}

	bound := map[string]bool{} // roles bound to the manager's ServiceAccount
	check := func(binding, namespace string, ref rbacv1.RoleRef, subjects []rbacv1.Subject) {
		roleNamespace := ""
		if ref.Kind == "Role" {
			roleNamespace = namespace
		}
		if !defined[ref.Kind+"/"+roleNamespace+"/"+ref.Name] {
			t.Errorf("%s: roleRef %s %s is not in config/default", binding, ref.Kind, ref.Name)
		}
		for _, s := range subjects {
			if s.Kind != rbacv1.ServiceAccountKind {
				continue
			}
			if !defined["ServiceAccount/"+s.Namespace+"/"+s.Name] {
				t.Errorf("%s: subject ServiceAccount %s/%s is not in config/default", binding, s.Namespace, s.Name)
			}
			if s.Name == m.spec.ServiceAccountName && s.Namespace == systemNamespace {
				bound[ref.Kind+" "+ref.Name] = true
			}
		}
	}
	for _, b := range objectsOfKind[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding") {
		check("ClusterRoleBinding "+b.Name, "", b.RoleRef, b.Subjects)
	}
	for _, b := range objectsOfKind[rbacv1.RoleBinding](t, objs, "RoleBinding") {
		check("RoleBinding "+b.Namespace+"/"+b.Name, b.Namespace, b.RoleRef, b.Subjects)
	}
	for _, role := range []string{
		"ClusterRole portcullis-manager-role",
		"ClusterRole portcullis-metrics-auth-role",
		"Role portcullis-leader-election-role",
	} {
		if !bound[role] {
			t.Errorf("%s is not bound to the manager's ServiceAccount", role)
		}
	}
}

// TestEnvoyEgressPoliciesSelectTheManager checks that the default --manager-pod-labels,
// which every Envoy egress NetworkPolicy allows xDS traffic to, select the deployed
// manager pods: otherwise every Envoy would be cut off from its configuration.
func TestEnvoyEgressPoliciesSelectTheManager(t *testing.T) {
	m := findManager(t, defaultObjects(t))
	want, err := labels.ConvertSelectorToLabelsMap(controllers.DefaultManagerPodLabels)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.flags(t)["manager-pod-labels"]; got != "" {
		want, err = labels.ConvertSelectorToLabelsMap(got)
		if err != nil {
			t.Fatalf("--manager-pod-labels=%q: %v", got, err)
		}
	}
	if !labels.SelectorFromSet(want).Matches(m.labels) {
		t.Errorf("manager pod labels %v are not selected by the Envoy egress policies' %v", m.labels, want)
	}
}
