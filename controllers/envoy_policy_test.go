package controllers

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

var testEnvoyEgress = EnvoyEgress{
	ManagerNamespace: "portcullis-system",
	ManagerPodLabels: map[string]string{"app.kubernetes.io/name": "portcullis"},
	XDSPort:          18000,
}

// TestEnvoyEgressPolicyFollowsDNS: the Envoy pods' egress policy allows the xDS server,
// DNS and exactly the vetted addresses; when the name moves to a new address, the policy
// allows the new address before Envoy has it as an endpoint, and drops the old one only
// after Envoy dropped it. Deleting the Gateway deletes the policy.
func TestEnvoyEgressPolicyFollowsDNS(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.EnvoyEgress = &testEnvoyEgress })
	const ns, hostname, upstreamPort = "envoy-egress", "moving.egress.test", 9080
	envoy := w.egressToFQDN(ns, hostname, upstreamPort)
	key := types.NamespacedName{Namespace: ns, Name: EnvoyEgressPolicyName("egress")}
	old, next := fmt.Sprintf("127.0.0.1:%d", upstreamPort), fmt.Sprintf("127.0.0.2:%d", upstreamPort)

	np := waitEnvoyPolicy(t, w.c, key, []string{"127.0.0.1/32"})
	assertEnvoyPolicyShape(t, np, ns)
	xdstest.WaitFor(t, 10*time.Second, "Envoy has the first address", func() error { return envoyHas(envoy, old, true) })

	watch := watchOrdering(t, w.c, envoy, key, old, next)
	// While Envoy is stopped it cannot acknowledge: the policy must widen to both
	// addresses and stay so.
	resume := pause(t, envoy)
	w.dns.Set(hostname, hostname+". 1 IN A 127.0.0.2")
	waitEnvoyPolicy(t, w.c, key, []string{"127.0.0.1/32", "127.0.0.2/32"})
	time.Sleep(1500 * time.Millisecond)
	if got := readCIDRs(w.c, key); !slices.Equal(got, []string{"127.0.0.1/32", "127.0.0.2/32"}) {
		t.Errorf("before Envoy acknowledged the new address the policy allowed %v; want both addresses", got)
	}
	resume()
	waitEnvoyPolicy(t, w.c, key, []string{"127.0.0.2/32"})
	xdstest.WaitFor(t, 10*time.Second, "Envoy has only the new address", func() error {
		return errorsJoin(envoyHas(envoy, next, true), envoyHas(envoy, old, false))
	})
	watch.stopAndCheck()

	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}}
	if err := w.c.Delete(context.Background(), gw); err != nil {
		t.Fatal(err)
	}
	xdstest.WaitFor(t, 10*time.Second, "the policy is deleted with the Gateway", func() error {
		err := w.c.Get(context.Background(), key, &networkingv1.NetworkPolicy{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// egressToFQDN applies, in ns, a Gateway egress on a free port, a Backend api for
// hostname:port and an HTTPRoute to it, with the DNS answering 127.0.0.1 (TTL 1 s), and
// starts the Gateway's Envoy.
func (w *world) egressToFQDN(ns, hostname string, port int) *xdstest.Envoy {
	w.t.Helper()
	w.dns.Set(hostname, hostname+". 1 IN A 127.0.0.1")
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(w.t), "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %[2]s}
    ports: [{name: http, port: %[3]d, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`, ns, hostname, port))
	return w.startEnvoy(ns + "/egress")
}

// pause stops the Envoy process (SIGSTOP) and returns the function that resumes it.
func pause(t *testing.T, e *xdstest.Envoy) func() {
	t.Helper()
	if err := syscall.Kill(e.PID(), syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	resume := func() { once.Do(func() { _ = syscall.Kill(e.PID(), syscall.SIGCONT) }) }
	t.Cleanup(resume)
	return resume
}

// egressGatewayYAML is a namespace with the Gateway "egress" of the default class on
// port, and that class; from is the listener's allowedRoutes.namespaces.from (Same or
// All).
func egressGatewayYAML(ns string, port uint32, from string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
`+portcullisClassYAML+`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: %[1]s}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: %[2]d, protocol: HTTP, allowedRoutes: {namespaces: {from: %[3]s}}}]
---
`, ns, port, from)
}

// waitEnvoyPolicy waits until the policy allows exactly the CIDRs.
func waitEnvoyPolicy(t *testing.T, c client.Client, key types.NamespacedName, cidrs []string) *networkingv1.NetworkPolicy {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	xdstest.WaitFor(t, 15*time.Second, fmt.Sprintf("Envoy egress policy allows %v", cidrs), func() error {
		if err := c.Get(context.Background(), key, np); err != nil {
			return err
		}
		if got := policyCIDRs(np); !slices.Equal(got, cidrs) {
			return fmt.Errorf("allows %v", got)
		}
		return nil
	})
	return np
}

func assertEnvoyPolicyShape(t *testing.T, np *networkingv1.NetworkPolicy, ns string) {
	t.Helper()
	if !labels.SelectorFromSet(np.Spec.PodSelector.MatchLabels).Matches(labels.Set(infra.SelectorLabels(ns, "egress"))) || len(np.Spec.PodSelector.MatchLabels) == 0 {
		t.Errorf("podSelector %v does not select the Gateway's Envoy pods", np.Spec.PodSelector)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeEgress {
		t.Errorf("policy types %v; want Egress only", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Egress) != 3 {
		t.Fatalf("egress rules %+v; want xDS, DNS and one address rule", np.Spec.Egress)
	}
	xds, dns, addr := np.Spec.Egress[0], np.Spec.Egress[1], np.Spec.Egress[2]
	if xds.Ports[0].Port.IntValue() != 18000 || xds.To[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "portcullis-system" ||
		xds.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "portcullis" {
		t.Errorf("first rule %+v; want the manager pods on the xDS port", xds)
	}
	if len(dns.Ports) != 2 || dns.Ports[0].Port.IntValue() != 53 {
		t.Errorf("second rule %+v; want cluster DNS", dns)
	}
	if len(addr.Ports) != 1 || addr.Ports[0].Port.IntValue() != 9080 || len(addr.To) != 1 || addr.To[0].IPBlock == nil {
		t.Errorf("address rule %+v; want one ipBlock on port 9080", addr)
	}
	if len(np.OwnerReferences) != 1 || np.OwnerReferences[0].Kind != "Gateway" || np.OwnerReferences[0].Name != "egress" {
		t.Errorf("owner references %+v; want the Gateway", np.OwnerReferences)
	}
}

// orderingWatch samples the policy and Envoy's endpoints while an address moves, reading
// them in the order that makes each check sound: Envoy then the policy for "added
// before" (a policy write before the publish is visible to a later read), the policy
// then Envoy for "removed after".
type orderingWatch struct {
	t       *testing.T
	stop    chan struct{}
	done    sync.WaitGroup
	mu      sync.Mutex
	errs    []string
	samples int
	widened bool
}

func watchOrdering(t *testing.T, c client.Client, envoy *xdstest.Envoy, key types.NamespacedName, old, next string) *orderingWatch {
	o := &orderingWatch{t: t, stop: make(chan struct{})}
	oldCIDR, nextCIDR := strings.Split(old, ":")[0]+"/32", strings.Split(next, ":")[0]+"/32"
	o.done.Add(1)
	go func() {
		defer o.done.Done()
		for {
			select {
			case <-o.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
			envoyNext, err := envoyEndpoint(envoy, next)
			policy := readCIDRs(c, key)
			envoyOld, err2 := envoyEndpoint(envoy, old)
			if err != nil || err2 != nil {
				continue // Envoy is paused
			}
			o.record(envoyNext, policy, nextCIDR, policy != nil && !slices.Contains(policy, oldCIDR), envoyOld)
		}
	}()
	return o
}

func (o *orderingWatch) record(envoyNext bool, afterEnvoy []string, nextCIDR string, policyLacksOld, envoyOld bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.samples++
	if len(afterEnvoy) == 2 {
		o.widened = true
	}
	if envoyNext && afterEnvoy != nil && !slices.Contains(afterEnvoy, nextCIDR) {
		o.errs = append(o.errs, fmt.Sprintf("Envoy had the new endpoint while the policy allowed only %v", afterEnvoy))
	}
	if policyLacksOld && envoyOld {
		o.errs = append(o.errs, "the policy dropped the old address while Envoy still had it")
	}
}

// stopAndCheck stops sampling once at least minSamples were taken (the settled state
// counts: both invariants must hold there too) and reports what was seen. Waiting for
// the samples matters since reconciles got fast: after Envoy resumes, the move can finish
// between two samples.
func (o *orderingWatch) stopAndCheck() {
	const minSamples = 3
	deadline := time.Now().Add(10 * time.Second)
	for o.sampleCount() < minSamples && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(o.stop)
	o.done.Wait()
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, e := range o.errs {
		o.t.Error(e)
	}
	if o.samples < minSamples {
		o.t.Errorf("only %d samples: the ordering was not observed", o.samples)
	}
	o.t.Logf("%d samples; a widened policy (both addresses) was seen: %v", o.samples, o.widened)
}

func (o *orderingWatch) sampleCount() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.samples
}

func readCIDRs(c client.Client, key types.NamespacedName) []string {
	np := &networkingv1.NetworkPolicy{}
	if err := c.Get(context.Background(), key, np); err != nil {
		return nil
	}
	return policyCIDRs(np)
}

func policyCIDRs(np *networkingv1.NetworkPolicy) []string {
	var out []string
	for cidr := range endpointsInPolicy(np) {
		out = append(out, cidr)
	}
	slices.Sort(out)
	return out
}

// envoyHas checks whether Envoy has (or has not) the endpoint "ip:port" in a cluster.
func envoyHas(e *xdstest.Envoy, endpoint string, want bool) error {
	got, err := envoyEndpoint(e, endpoint)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("Envoy has endpoint %s: %v", endpoint, got)
	}
	return nil
}

// adminClient gives up quickly: a paused Envoy does not answer.
var adminClient = &http.Client{Timeout: 300 * time.Millisecond}

// envoyEndpoint tells whether Envoy has the endpoint "ip:port" in a cluster.
func envoyEndpoint(e *xdstest.Envoy, endpoint string) (bool, error) {
	body, err := adminGet(e, "/clusters")
	return strings.Contains(body, "::"+endpoint+"::"), err
}

// adminGet reads a page of Envoy's admin interface.
func adminGet(e *xdstest.Envoy, path string) (string, error) {
	resp, err := adminClient.Get(e.AdminURL() + path)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return string(body), err
}

func errorsJoin(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func TestEnvoyEgressAddressRules(t *testing.T) {
	tests := []struct {
		name      string
		endpoints []ir.Endpoint
		want      string
	}{
		{"IPv4 is a /32", []ir.Endpoint{{Address: "203.0.113.7", Port: 443}}, "203.0.113.7/32:443"},
		{"IPv6 is a /128", []ir.Endpoint{{Address: "2001:db8::1", Port: 443}}, "2001:db8::1/128:443"},
		{"an IPv4-mapped IPv6 address is its IPv4 /32", []ir.Endpoint{{Address: "::ffff:203.0.113.7", Port: 443}}, "203.0.113.7/32:443"},
		{"a name is never allowed", []ir.Endpoint{{Address: "api.example.com", Port: 443}}, ""},
		{"addresses sharing ports share a rule, sorted", []ir.Endpoint{{Address: "203.0.113.9", Port: 443}, {Address: "203.0.113.10", Port: 443}},
			"203.0.113.9/32,203.0.113.10/32:443"},
		{"an address on two ports has both", []ir.Endpoint{{Address: "203.0.113.7", Port: 8443}, {Address: "203.0.113.7", Port: 443}},
			"203.0.113.7/32:443,8443"},
		{"different port sets make different rules", []ir.Endpoint{{Address: "203.0.113.7", Port: 443}, {Address: "203.0.113.8", Port: 80}},
			"203.0.113.7/32:443 203.0.113.8/32:80"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := ir.Gateway{Clusters: []*ir.Cluster{{Name: "c", Endpoints: tt.endpoints}}}
			if got := rulesString(endpointsOf(gw).rules()); got != tt.want {
				t.Errorf("rules = %q; want %q", got, tt.want)
			}
		})
	}
}

func TestEnvoyEgressPolicyRoundTrips(t *testing.T) {
	allowed := allowedEndpoints{}
	allowed.add("203.0.113.7/32", 443, 8443)
	allowed.add("2001:db8::1/128", 443)
	allowed.add("203.0.113.8/32") // no port: nothing is allowed
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: "gw"}}
	np := &networkingv1.NetworkPolicy{Spec: envoyEgressSpec(testEnvoyEgress, gw, allowed)}
	back := endpointsInPolicy(np)
	if got, want := rulesString(back.rules()), rulesString(allowed.rules()); got != want || strings.Contains(got, "203.0.113.8") {
		t.Errorf("read back %q; want %q without the portless address", got, want)
	}
	for _, rule := range np.Spec.Egress {
		if len(rule.Ports) == 0 {
			t.Errorf("rule %+v has no ports: it would allow every port", rule)
		}
	}
}

// rulesString renders address rules as "cidr,cidr:port,port" separated by spaces.
func rulesString(rules []networkingv1.NetworkPolicyEgressRule) string {
	var parts []string
	for _, r := range rules {
		var cidrs, ports []string
		for _, peer := range r.To {
			cidrs = append(cidrs, peer.IPBlock.CIDR)
		}
		for _, p := range r.Ports {
			ports = append(ports, p.Port.String())
		}
		parts = append(parts, strings.Join(cidrs, ",")+":"+strings.Join(ports, ","))
	}
	return strings.Join(parts, " ")
}
