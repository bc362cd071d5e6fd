package infra

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

const testXDSName = "portcullis-xds.portcullis-system.svc"

func newKubernetes(t *testing.T, certs ClientSecretEnsurer) *Kubernetes {
	t.Helper()
	k, err := NewKubernetes(k8s(t), KubernetesOptions{XDSAddress: testXDSName, XDSPort: 18000, ClientSecrets: certs})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// xdsCerts returns a certificate manager whose clock the test moves.
func xdsCerts(t *testing.T) (*xdscerts.Manager, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Now()}
	// The owners of client Secrets are Gateways: the manager's scheme must know them.
	scheme := testenv.Scheme()
	if err := gwapiv1.Install(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(api.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	m, err := xdscerts.New(c, xdscerts.Options{
		Namespace:    newNamespace(t),
		ServiceNames: xdscerts.ServiceDNSNames("portcullis-xds", "portcullis-system"),
		Clock:        clock.Now,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	return m, clock
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// gatewayObjects reads the four objects of a Gateway.
type gatewayObjects struct {
	sa  corev1.ServiceAccount
	cm  corev1.ConfigMap
	dep appsv1.Deployment
	svc corev1.Service
}

func (o *gatewayObjects) list() []client.Object { return []client.Object{&o.sa, &o.cm, &o.dep, &o.svc} }

func readObjects(t *testing.T, namespace, name string) *gatewayObjects {
	t.Helper()
	o := &gatewayObjects{}
	key := types.NamespacedName{Namespace: namespace, Name: ResourceName(name)}
	for _, obj := range o.list() {
		if err := k8s(t).Get(context.Background(), key, obj); err != nil {
			t.Fatalf("get %T %s: %v", obj, key, err)
		}
	}
	return o
}

func (o *gatewayObjects) versions() map[string]string {
	return map[string]string{
		"ServiceAccount": o.sa.ResourceVersion, "ConfigMap": o.cm.ResourceVersion,
		"Deployment": o.dep.ResourceVersion, "Service": o.svc.ResourceVersion,
	}
}

type portMap struct {
	Port   int32
	Target intstr.IntOrString
}

func servicePortMap(svc *corev1.Service) []portMap {
	var out []portMap
	for _, p := range svc.Spec.Ports {
		out = append(out, portMap{p.Port, p.TargetPort})
	}
	return out
}

func containerPortNumbers(dep *appsv1.Deployment) []int32 {
	var out []int32
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		out = append(out, p.ContainerPort)
	}
	return out
}

// wantObjectLabels are Portcullis' labels plus Gateway API's gateway-name label.
func wantObjectLabels(ns, name string) map[string]string {
	l := Labels(ns, name)
	l["gateway.networking.k8s.io/gateway-name"] = name
	return l
}

func testGateway(ns string) Gateway {
	return Gateway{
		Name: "egress", Namespace: ns, UID: "3c8f0a52-uid", Generation: 1,
		Listeners: []Listener{
			{Name: "http", Port: 80, EnvoyPort: 10080},
			{Name: "https", Port: 443, EnvoyPort: 10443},
			{Name: "http-other-host", Port: 80, EnvoyPort: 10080},
			{Name: "alt", Port: 8080, EnvoyPort: 8080},
		},
	}
}

func TestKubernetesEnsure(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	certs, clock := xdsCerts(t)
	k := newKubernetes(t, certs)
	gw := testGateway(ns)
	addrs, err := k.Ensure(ctx, gw)
	if err != nil {
		t.Fatal(err)
	}
	objs := readObjects(t, ns, gw.Name)

	checks := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"the status address is the Service's cluster IP", func(t *testing.T) {
			want := []gwapiv1.GatewayStatusAddress{{Type: ptr.To(gwapiv1.IPAddressType), Value: objs.svc.Spec.ClusterIP}}
			if objs.svc.Spec.ClusterIP == "" || !slices.Equal(addressStrings(addrs), addressStrings(want)) {
				t.Errorf("addresses = %v, want %v", addressStrings(addrs), addressStrings(want))
			}
		}},
		{"every object is labelled for the Gateway and controlled by it", func(t *testing.T) {
			for _, obj := range objs.list() {
				if !maps.Equal(obj.GetLabels(), wantObjectLabels(ns, gw.Name)) {
					t.Errorf("%T labels = %v", obj, obj.GetLabels())
				}
				want := []metav1.OwnerReference{{APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", Name: gw.Name,
					UID: gw.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
				if !slices.Equal(ownerStrings(obj.GetOwnerReferences()), ownerStrings(want)) {
					t.Errorf("%T owner references = %v", obj, obj.GetOwnerReferences())
				}
			}
		}},
		{"the Service maps each public port once to its Envoy port", func(t *testing.T) {
			want := []portMap{{80, intstr.FromInt32(10080)}, {443, intstr.FromInt32(10443)}, {8080, intstr.FromInt32(8080)}}
			if got := servicePortMap(&objs.svc); !slices.Equal(got, want) {
				t.Errorf("ports = %v, want %v", got, want)
			}
			if objs.svc.Spec.Type != corev1.ServiceTypeClusterIP || !maps.Equal(objs.svc.Spec.Selector, SelectorLabels(ns, gw.Name)) {
				t.Errorf("type %s, selector %v", objs.svc.Spec.Type, objs.svc.Spec.Selector)
			}
		}},
		{"the Deployment selects exactly its pods", func(t *testing.T) {
			sel := objs.dep.Spec.Selector.MatchLabels
			if !maps.Equal(sel, SelectorLabels(ns, gw.Name)) || !maps.Equal(objs.dep.Spec.Template.Labels, wantObjectLabels(ns, gw.Name)) {
				t.Errorf("selector %v, pod labels %v", sel, objs.dep.Spec.Template.Labels)
			}
			if r := objs.dep.Spec.Replicas; r == nil || *r != 1 {
				t.Errorf("replicas = %v", r)
			}
		}},
		{"the Envoy container runs the pinned image unprivileged on a read-only root", func(t *testing.T) {
			pod := objs.dep.Spec.Template.Spec
			c := pod.Containers[0]
			if c.Image != "envoyproxy/envoy:v1.40.0" {
				t.Errorf("image = %s", c.Image)
			}
			psc, sc := pod.SecurityContext, c.SecurityContext
			if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || ptr.Deref(psc.RunAsUser, 0) == 0 ||
				psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				t.Errorf("pod security context = %+v", psc)
			}
			if sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || ptr.Deref(sc.AllowPrivilegeEscalation, true) ||
				sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
				t.Errorf("container security context = %+v", sc)
			}
			if ptr.Deref(pod.AutomountServiceAccountToken, true) || pod.ServiceAccountName != ResourceName(gw.Name) {
				t.Errorf("service account %q, automount %v", pod.ServiceAccountName, pod.AutomountServiceAccountToken)
			}
			if c.Resources.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || c.Resources.Requests.Memory().Cmp(resource.MustParse("128Mi")) != 0 {
				t.Errorf("requests = %v", c.Resources.Requests)
			}
			if !slices.Contains(c.Args, "--service-node") || !slices.Contains(c.Args, "$(POD_NAME)") {
				t.Errorf("args = %v", c.Args)
			}
		}},
		{"the container exposes the Envoy ports and is ready when the readiness listener says so", func(t *testing.T) {
			if got := containerPortNumbers(&objs.dep); !slices.Equal(got, []int32{8080, 10080, 10443, ReadinessPort, MetricsPort}) {
				t.Errorf("container ports = %v", got)
			}
			p := objs.dep.Spec.Template.Spec.Containers[0].ReadinessProbe
			if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != "/ready" || p.HTTPGet.Port != intstr.FromInt32(ReadinessPort) {
				t.Errorf("readiness probe = %+v", p)
			}
		}},
		{"Prometheus finds the pods' metrics port by name and by annotation", func(t *testing.T) {
			ports := objs.dep.Spec.Template.Spec.Containers[0].Ports
			if i := slices.IndexFunc(ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" }); i < 0 || ports[i].ContainerPort != 19002 {
				t.Errorf("container ports = %+v; want one named metrics on 19002", ports)
			}
			ann := objs.dep.Spec.Template.Annotations
			want := map[string]string{"prometheus.io/scrape": "true", "prometheus.io/port": "19002", "prometheus.io/path": "/stats/prometheus"}
			for k, v := range want {
				if ann[k] != v {
					t.Errorf("pod annotation %s = %q, want %q", k, ann[k], v)
				}
			}
		}},
		{"the pods mount the bootstrap and the namespace's xDS client Secret", func(t *testing.T) {
			vols := map[string]corev1.VolumeSource{}
			for _, v := range objs.dep.Spec.Template.Spec.Volumes {
				vols[v.Name] = v.VolumeSource
			}
			if cm := vols[bootstrapVolume].ConfigMap; cm == nil || cm.Name != objs.cm.Name {
				t.Errorf("bootstrap volume = %+v", vols[bootstrapVolume])
			}
			if s := vols[xdsClientVolume].Secret; s == nil || s.SecretName != xdscerts.EnvoyClientSecretName {
				t.Errorf("xDS client volume = %+v", vols[xdsClientVolume])
			}
		}},
		{"the namespace's xDS client Secret exists with the Gateway among its owners", func(t *testing.T) {
			secret := &corev1.Secret{}
			if err := k8s(t).Get(ctx, types.NamespacedName{Namespace: ns, Name: xdscerts.EnvoyClientSecretName}, secret); err != nil {
				t.Fatal(err)
			}
			if len(secret.OwnerReferences) != 1 || secret.OwnerReferences[0].UID != gw.UID || secret.OwnerReferences[0].Kind != "Gateway" {
				t.Errorf("owner references = %+v", secret.OwnerReferences)
			}
		}},
		{"the pod template carries the hashes of the bootstrap and of the client certificate", func(t *testing.T) {
			ann := objs.dep.Spec.Template.Annotations
			if ann[AnnotationBootstrapHash] != hash([]byte(objs.cm.Data[BootstrapKey])) {
				t.Errorf("bootstrap hash = %q", ann[AnnotationBootstrapHash])
			}
			secret := &corev1.Secret{}
			if err := k8s(t).Get(ctx, types.NamespacedName{Namespace: ns, Name: xdscerts.EnvoyClientSecretName}, secret); err != nil {
				t.Fatal(err)
			}
			if ann[AnnotationXDSClientHash] != hash(secret.Data["tls.crt"], secret.Data["ca.crt"]) {
				t.Errorf("client certificate hash = %q", ann[AnnotationXDSClientHash])
			}
		}},
		{"the ConfigMap's bootstrap parses and names the Gateway as node cluster, with mTLS to the xDS Service", func(t *testing.T) {
			b := parseBootstrap(t, objs.cm.Data[BootstrapKey])
			if got := b.GetNode().GetCluster(); got != ns+"/egress" {
				t.Errorf("node.cluster = %q", got)
			}
			if a := b.GetAdmin().GetAddress().GetSocketAddress(); a.GetAddress() != "127.0.0.1" || a.GetPortValue() != AdminPort {
				t.Errorf("admin = %v", a)
			}
			var xdsTLS tlsv3.UpstreamTlsContext
			for _, c := range b.GetStaticResources().GetClusters() {
				if c.GetName() == bootstrap.XDSClusterName {
					if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(&xdsTLS); err != nil {
						t.Fatal(err)
					}
				}
			}
			cert := xdsTLS.GetCommonTlsContext().GetTlsCertificates()
			if xdsTLS.GetSni() != testXDSName || len(cert) != 1 || cert[0].GetPrivateKey().GetFilename() != XDSClientDir+"/tls.key" ||
				xdsTLS.GetCommonTlsContext().GetValidationContext().GetTrustedCa().GetFilename() != XDSClientDir+"/ca.crt" {
				t.Errorf("xDS TLS = %v", &xdsTLS)
			}
			var bound []string
			for _, l := range b.GetStaticResources().GetListeners() {
				sa := l.GetAddress().GetSocketAddress()
				bound = append(bound, fmt.Sprintf("%s:%d", sa.GetAddress(), sa.GetPortValue()))
			}
			if want := []string{"0.0.0.0:19001", "0.0.0.0:19002"}; !slices.Equal(bound, want) {
				t.Errorf("static listeners bind %v, want the readiness and metrics listeners %v", bound, want)
			}
		}},
		{"the ServiceAccount mounts no token", func(t *testing.T) {
			if ptr.Deref(objs.sa.AutomountServiceAccountToken, true) {
				t.Errorf("automountServiceAccountToken = %v", objs.sa.AutomountServiceAccountToken)
			}
		}},
	}
	for _, c := range checks {
		t.Run(c.name, c.check)
	}

	t.Run("Ensure again changes no object", func(t *testing.T) {
		before := objs.versions()
		again, err := k.Ensure(ctx, gw)
		if err != nil {
			t.Fatal(err)
		}
		if after := readObjects(t, ns, gw.Name).versions(); !maps.Equal(before, after) {
			t.Errorf("resourceVersions %v -> %v", before, after)
		}
		if !slices.Equal(addressStrings(again), addressStrings(addrs)) {
			t.Errorf("addresses %v -> %v", addressStrings(addrs), addressStrings(again))
		}
	})

	t.Run("a changed listener set updates the Service and the Deployment only", func(t *testing.T) {
		before := readObjects(t, ns, gw.Name)
		changed := gw
		changed.Listeners = []Listener{{Name: "http", Port: 80, EnvoyPort: 10080}, {Name: "metrics-api", Port: 9090, EnvoyPort: 9090}}
		if _, err := k.Ensure(ctx, changed); err != nil {
			t.Fatal(err)
		}
		after := readObjects(t, ns, gw.Name)
		want := []portMap{{80, intstr.FromInt32(10080)}, {9090, intstr.FromInt32(9090)}}
		if got := servicePortMap(&after.svc); !slices.Equal(got, want) {
			t.Errorf("Service ports = %v, want %v", got, want)
		}
		if got := containerPortNumbers(&after.dep); !slices.Equal(got, []int32{9090, 10080, ReadinessPort, MetricsPort}) {
			t.Errorf("container ports = %v", got)
		}
		if after.svc.Spec.ClusterIP != before.svc.Spec.ClusterIP {
			t.Errorf("cluster IP changed %s -> %s", before.svc.Spec.ClusterIP, after.svc.Spec.ClusterIP)
		}
		for _, kind := range []string{"ServiceAccount", "ConfigMap"} {
			if before.versions()[kind] != after.versions()[kind] {
				t.Errorf("%s changed, but listeners come by xDS", kind)
			}
		}
		if before.dep.Spec.Template.Annotations[AnnotationBootstrapHash] != after.dep.Spec.Template.Annotations[AnnotationBootstrapHash] {
			t.Errorf("bootstrap hash changed")
		}
	})

	t.Run("a renewed client certificate changes the pod template, so the pods restart to load it", func(t *testing.T) {
		before := readObjects(t, ns, gw.Name).dep.Spec.Template.Annotations[AnnotationXDSClientHash]
		clock.Add(xdscerts.DefaultLeafLifetime)
		if err := certs.Refresh(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := k.Ensure(ctx, gw); err != nil {
			t.Fatal(err)
		}
		if after := readObjects(t, ns, gw.Name).dep.Spec.Template.Annotations[AnnotationXDSClientHash]; after == before || after == "" {
			t.Errorf("client certificate hash %q -> %q", before, after)
		}
	})

	t.Run("Delete removes every object, and again is no error", func(t *testing.T) {
		for range 2 {
			if err := k.Delete(ctx, ns, gw.Name); err != nil {
				t.Fatal(err)
			}
		}
		for _, obj := range (&gatewayObjects{}).list() {
			err := k8s(t).Get(ctx, types.NamespacedName{Namespace: ns, Name: ResourceName(gw.Name)}, obj)
			if !apierrors.IsNotFound(err) {
				t.Errorf("%T after Delete: %v", obj, err)
			}
		}
	})
}

func addressStrings(addrs []gwapiv1.GatewayStatusAddress) []string {
	var out []string
	for _, a := range addrs {
		out = append(out, string(ptr.Deref(a.Type, ""))+" "+a.Value)
	}
	return out
}

func ownerStrings(refs []metav1.OwnerReference) []string {
	var out []string
	for _, r := range refs {
		out = append(out, fmt.Sprintf("%s %s %s %s controller=%v block=%v", r.APIVersion, r.Kind, r.Name, r.UID,
			ptr.Deref(r.Controller, false), ptr.Deref(r.BlockOwnerDeletion, false)))
	}
	return out
}

func parseBootstrap(t *testing.T, y string) *bootstrapv3.Bootstrap {
	t.Helper()
	js, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatalf("bootstrap is not YAML: %v", err)
	}
	var b bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &b); err != nil {
		t.Fatalf("bootstrap does not parse: %v", err)
	}
	if err := b.ValidateAll(); err != nil {
		t.Fatalf("bootstrap is invalid: %v", err)
	}
	return &b
}

func TestKubernetesLeavesForeignObjectsAlone(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	k := newKubernetes(t, nil)
	gw := testGateway(ns)
	tests := []struct {
		name   string
		labels map[string]string
	}{
		{"an unlabelled ConfigMap of the same name", nil},
		{"a ConfigMap Portcullis made for another Gateway", Labels(ns, "other")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			foreign := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ResourceName(gw.Name), Namespace: ns, Labels: tt.labels},
				Data:       map[string]string{"owner": "someone else"},
			}
			if err := k8s(t).Create(ctx, foreign); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = k8s(t).Delete(ctx, foreign) })
			if _, err := k.Ensure(ctx, gw); err == nil || !strings.Contains(err.Error(), "not made by Portcullis") {
				t.Fatalf("Ensure error = %v", err)
			}
			if err := k.Delete(ctx, ns, gw.Name); err != nil {
				t.Fatal(err)
			}
			got := &corev1.ConfigMap{}
			if err := k8s(t).Get(ctx, client.ObjectKeyFromObject(foreign), got); err != nil || got.Data["owner"] != "someone else" {
				t.Fatalf("the foreign ConfigMap was touched: %v %v", err, got.Data)
			}
			var deps appsv1.DeploymentList
			if err := k8s(t).List(ctx, &deps, client.InNamespace(ns)); err != nil || len(deps.Items) != 0 {
				t.Fatalf("Ensure created a Deployment anyway: %v %d", err, len(deps.Items))
			}
		})
	}
}
