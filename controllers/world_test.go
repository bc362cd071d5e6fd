package controllers

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strings"
	"sync"
	"testing"
	"text/template"
	"time"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

var api *testenv.APIServer

// portcullisClassYAML is the GatewayClass the tests' Gateways use, as a document of
// the YAML they apply.
const portcullisClassYAML = `apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: portcullis}
spec: {controllerName: portcullis.io/gateway-controller}
`

func TestMain(m *testing.M) {
	os.Exit(testenv.RunWithAPIServer(m, func(a *testenv.APIServer) { api = a }))
}

// world is a running manager with the real xDS server and DNS guard, and the Envoys a
// test starts for its Gateways. Only one world runs at a time: two managers would fight
// over the same statuses.
type world struct {
	t      *testing.T
	c      client.Client
	xds    *xds.Server
	dns    *dnstest.Server
	envoy  *xdstest.Envoy // startWorld's Envoy, serving gw/egress on port
	port   uint32
	policy egress.AddressPolicy

	controller gwapiv1.GatewayController
	xdsPort    uint32
	logs       *logLines
	resyncs    int
}

// startWorld is newWorld with one Envoy serving the Gateway gw/egress on w.port.
func startWorld(t *testing.T, opts ...func(*Options)) *world {
	t.Helper()
	w := newWorld(t, opts...)
	w.port = xdstest.FreePort(t)
	w.envoy = w.startEnvoy("gw/egress")
	return w
}

// newWorld starts the manager in-process, wired as in production but for the DNS guard
// (pointed at a scriptable DNS server, loopback allowed, IPv4 only) and without a
// provider: tests start the Envoys they need (startEnvoy). opts may change the
// reconciler's Options (a provider, another controller name). The manager is stopped,
// and waited for, when the test ends.
func newWorld(t *testing.T, opts ...func(*Options)) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := &world{t: t, c: api.Client, dns: dnstest.NewServer(t), logs: &logLines{}}
	// Registered first, so it runs last: after the manager stopped.
	t.Cleanup(func() { w.logs.dumpIfFailed(t) })
	// The manager logs while stopping, after the test returned: testr would panic then.
	// The global logger takes only the first world's; each manager gets its own.
	logger := funcr.New(w.logs.write, funcr.Options{Verbosity: 1})
	log.SetLogger(logger)

	w.xds = xds.New(logger)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w.xdsPort = uint32(lis.Addr().(*net.TCPAddr).Port)
	go func() { _ = w.xds.Serve(ctx, lis) }()

	cfg := dnsguard.DefaultConfig()
	cfg.DNSServers, cfg.AllowCIDRs, cfg.IPFamily, cfg.MinTTL = []string{w.dns.Addr()}, []string{"127.0.0.0/8"}, dnsguard.IPv4, time.Second
	// A server that never answers (the suite's "silent" name) leaves a Backend Pending
	// for two timeouts: 10 s, long enough to be seen on a busy machine, where the
	// reconcile that writes Pending can itself take seconds.
	cfg.Timeout = 5 * time.Second
	policy, err := cfg.AddressPolicy()
	if err != nil {
		t.Fatal(err)
	}
	w.policy = policy
	resolver, err := dnsguard.NewResolver(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	store := dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{})
	go func() { _ = store.Run(ctx) }()

	// Each test runs its own manager in this process: the controller name repeats.
	skip := true
	mgr, err := ctrl.NewManager(api.Config, ctrl.Options{Scheme: api.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0", Cache: CacheOptions(),
		Controller: config.Controller{SkipNameValidation: &skip}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// Tests call through Envoy from 127.0.0.1, like a user of local mode: an
	// unrestricted caller. Tenants get other loopback addresses (tenancy_test.go).
	o := Options{ControllerName: egress.ControllerName, XDS: w.xds, DNS: store, AddressPolicy: policy,
		Unrestricted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}
	for _, opt := range opts {
		opt(&o)
	}
	w.controller = o.ControllerName
	r := NewReconciler(mgr, o)
	if err := r.SetupWithManager(ctx, mgr); err != nil {
		t.Fatal(err)
	}
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
			t.Errorf("the manager did not stop within 30s")
		}
	})
	return w
}

// startEnvoy starts an Envoy of the Gateway ("namespace/name"), stopped when the test
// ends.
func (w *world) startEnvoy(gateway string) *xdstest.Envoy {
	w.t.Helper()
	return xdstest.Start(w.t, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{Gateway: gateway, NodeID: "test-" + strings.ReplaceAll(gateway, "/", "-"),
			XDSAddress: "127.0.0.1", XDSPort: w.xdsPort, AdminPort: admin})
	}})
}

// in returns the world for a subtest: helpers fail t, and Envoys started through it
// stop when t ends.
func (w *world) in(t *testing.T) *world {
	c := *w
	c.t = t
	return &c
}

// apply creates every object of a multi-document YAML and returns them. A GatewayClass
// that exists already is kept: several tests declare the same class.
func (w *world) apply(yamlText string) []client.Object {
	w.t.Helper()
	return w.applyLabelled("", yamlText)
}

// applyLabelled is apply naming label (a test case) in its failures.
func (w *world) applyLabelled(label, yamlText string) []client.Object {
	w.t.Helper()
	if label == "" {
		label = "apply"
	}
	var out []client.Object
	for _, obj := range decodeYAML(w.t, label, yamlText) {
		err := w.c.Create(context.Background(), obj)
		if apierrors.IsAlreadyExists(err) && obj.GetKind() == "GatewayClass" {
			continue
		}
		if err != nil {
			w.t.Fatalf("%s: create %s %s: %v", label, obj.GetKind(), obj.GetName(), err)
		}
		out = append(out, obj)
	}
	return out
}

// ensure creates every object of the YAML that does not exist yet: for cluster-scoped
// objects shared by several tests.
func (w *world) ensure(yamlText string) {
	w.t.Helper()
	for _, obj := range decodeYAML(w.t, "ensure", yamlText) {
		if err := w.c.Create(context.Background(), obj); err != nil && !apierrors.IsAlreadyExists(err) {
			w.t.Fatalf("create %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// namespace creates a namespace.
func (w *world) namespace(name string) {
	w.t.Helper()
	if err := w.c.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		w.t.Fatalf("create namespace %s: %v", name, err)
	}
}

// decodeYAML splits a multi-document YAML into objects of any kind; label names the
// input in a failure.
func decodeYAML(t *testing.T, label, yamlText string) []*unstructuredObject {
	t.Helper()
	var out []*unstructuredObject
	dec := utilyaml.NewYAMLOrJSONDecoder(strings.NewReader(yamlText), 4096)
	for {
		var u map[string]any
		if err := dec.Decode(&u); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("%s: decode YAML: %v", label, err)
			}
			break
		}
		if len(u) == 0 {
			continue
		}
		obj := &unstructuredObject{}
		obj.SetUnstructuredContent(u)
		out = append(out, obj)
	}
	return out
}

// templateFuncs help YAML templates embed certificates: b64 for Secret data, quote for
// a PEM string in ConfigMap data.
var templateFuncs = template.FuncMap{
	"b64": func(b []byte) string { return base64.StdEncoding.EncodeToString(b) },
	"quote": func(v any) (string, error) {
		if b, ok := v.([]byte); ok {
			v = string(b)
		}
		out, err := json.Marshal(v)
		return string(out), err
	},
}

// render executes a text/template with templateFuncs; a missing key is an error.
func render(t *testing.T, text string, data any) string {
	t.Helper()
	tmpl, err := template.New("yaml").Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("parse template: %v", err)
	}
	var buf bytes.Buffer
	if err := tmpl.Execute(&buf, data); err != nil {
		t.Fatalf("render template: %v", err)
	}
	return buf.String()
}

// condition waits until the object's condition of the given type has the status and reason.
func (w *world) condition(obj client.Object, conds func() []metav1.Condition, typ, status, reason string) {
	w.t.Helper()
	key := client.ObjectKeyFromObject(obj)
	xdstest.WaitFor(w.t, 20*time.Second, fmt.Sprintf("%T %s %s=%s/%s", obj, key, typ, status, reason), func() error {
		if err := w.c.Get(context.Background(), key, obj); err != nil {
			return err
		}
		for _, c := range conds() {
			if c.Type == typ {
				if string(c.Status) == status && c.Reason == reason {
					return nil
				}
				return fmt.Errorf("now %s/%s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no %s condition yet", typ)
	})
}

// resyncNamespace is labelled to make the manager reconcile without any input change.
const resyncNamespace = "resync-trigger"

// resync makes the manager translate everything again although nothing changed (a
// Namespace label change is an event every reconcile takes in).
func (w *world) resync() {
	w.t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{}
	if err := w.c.Get(ctx, types.NamespacedName{Name: resyncNamespace}, ns); apierrors.IsNotFound(err) {
		ns.Name = resyncNamespace
		if err := w.c.Create(ctx, ns); err != nil {
			w.t.Fatal(err)
		}
	} else if err != nil {
		w.t.Fatal(err)
	}
	w.resyncs++
	ns.Labels = map[string]string{"resync": fmt.Sprintf("%d-%d", time.Now().UnixNano(), w.resyncs)}
	if err := w.c.Update(ctx, ns); err != nil {
		w.t.Fatal(err)
	}
}

// assertResyncWritesNothing triggers a full reconcile and checks no object was rewritten.
func assertResyncWritesNothing(t *testing.T, w *world, objs []client.Object) {
	t.Helper()
	before := settledVersions(t, w.c, objs)
	w.resync()
	time.Sleep(2 * time.Second)
	after := resourceVersions(t, w.c, objs)
	for i, o := range objs {
		if after[i] != before[i] {
			t.Errorf("%s %s was rewritten by a resync that changed nothing (resourceVersion %s -> %s)", kindName(o), client.ObjectKeyFromObject(o), before[i], after[i])
		}
	}
}

// settledVersions waits until no object of objs was written for a second and returns
// their resourceVersions. A want can hold before the last status write of the same
// reconcile landed (a busy machine spreads them over seconds); a manager that never
// stops writing fails here, naming what keeps changing.
func settledVersions(t *testing.T, c client.Client, objs []client.Object) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	last := resourceVersions(t, c, objs)
	for {
		time.Sleep(time.Second)
		now := resourceVersions(t, c, objs)
		var changed []string
		for i, o := range objs {
			if now[i] != last[i] {
				changed = append(changed, kindName(o)+" "+client.ObjectKeyFromObject(o).String())
			}
		}
		if len(changed) == 0 {
			return now
		}
		if time.Now().After(deadline) {
			t.Fatalf("objects still rewritten after 30s with nothing changing: %s", strings.Join(changed, ", "))
		}
		last = now
	}
}

// resourceVersions returns the objects' resourceVersions by position: a Backend and a
// route may share a name.
func resourceVersions(t *testing.T, c client.Client, objs []client.Object) []string {
	t.Helper()
	out := make([]string, len(objs))
	for i, o := range objs {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			t.Fatalf("get %s %s: %v", kindName(o), client.ObjectKeyFromObject(o), err)
		}
		out[i] = o.GetResourceVersion()
	}
	return out
}

func kindName(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", o)
}

// logLines keeps every manager log line (up to V(1)). They are printed only when the
// test fails (dumpIfFailed): printed as they come, the logs of the tests that passed
// bury the failure's own message in the package's output.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) write(prefix, args string) {
	line := prefix + " " + args
	l.mu.Lock()
	l.lines = append(l.lines, line)
	l.mu.Unlock()
}

// dumpedLines is how many of the last V(0) lines a failing test prints.
const dumpedLines = 200

// dumpIfFailed prints the last V(0) lines of the manager to stderr when t failed (V(1)
// lines too when TEST_LOG_V1 is set: what was published, and every reconcile).
func (l *logLines) dumpIfFailed(t *testing.T) {
	if !t.Failed() {
		return
	}
	var v0 []string
	for _, line := range l.snapshot() {
		if os.Getenv("TEST_LOG_V1") != "" || !strings.Contains(line, `"level"=1 `) {
			v0 = append(v0, line)
		}
	}
	if len(v0) > dumpedLines {
		v0 = v0[len(v0)-dumpedLines:]
	}
	fmt.Fprintf(os.Stderr, "--- the last %d manager log lines of %s:\n%s\n--- end of the manager log of %s\n", len(v0), t.Name(), strings.Join(v0, "\n"), t.Name())
}

// snapshot returns the lines logged so far.
func (l *logLines) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.lines...)
}

// unstructuredObject lets apply create objects of any kind from YAML.
type unstructuredObject = unstructured.Unstructured
