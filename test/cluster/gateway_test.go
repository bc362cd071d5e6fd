//go:build cluster

package cluster

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/controllers"
	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestGatewayInCluster is the whole in-cluster path, in order: deploy, Gateway, traffic
// from pods, audit log, NetworkPolicies. Each step's time is logged.
func TestGatewayInCluster(t *testing.T) {
	k := connect(t)
	step := stepTimer(t)

	k.deploy()
	step("deploy")
	k.removeLeftovers()
	t.Cleanup(func() { k.cleanup(os.Getenv("PORTCULLIS_CLUSTER_KEEP") != "") })

	// The outside API: HTTPS on the node's lo address that api.partner.example resolves
	// to, trusting only our CA for client certificates and refusing any other SNI.
	ca := testpki.NewCA(t, "pc-e2e partner CA")
	serverCert := ca.Issue(t, testpki.Options{CommonName: partnerHost, DNSNames: []string{partnerHost}})
	clientCert := ca.Issue(t, testpki.Options{CommonName: clientCN, Client: true})
	upstream := serveOutsideAPI(t, serverCert, ca)

	k.apply(namespacesYAML)
	k.tlsObjects(ca, clientCert)
	k.apply(strings.Join([]string{gatewayYAML, workloadsYAML, routesYAML}, "\n---\n"))
	step("apply")

	gw := k.waitGatewayProgrammed()
	step("Gateway Programmed")
	k.waitEnvoyReady()
	k.waitPodsReady(appsNS, "app=echo")
	appsClient := k.waitPodsReady(appsNS, "app=client")[0]
	otherClient := k.waitPodsReady(otherNS, "app=client")[0]
	step("Envoy, echo and client pods Ready")
	gwURL := "http://" + net.JoinHostPort(gatewayAddress(gw), "80")

	t.Run("ServiceBackend", func(t *testing.T) {
		res := eventuallyStatus(t, appsClient, gwURL+"/hello", echoHost, http.StatusOK)
		var echo struct{ Namespace, Pod, Path string }
		if err := json.Unmarshal([]byte(res.Body), &echo); err != nil {
			t.Fatalf("echo-basic answer is not JSON: %v: %q", err, res.Body)
		}
		if echo.Namespace != appsNS || !strings.HasPrefix(echo.Pod, "echo-") || echo.Path != "/hello" {
			t.Fatalf("echo-basic saw %+v, want namespace %s, an echo- pod, path /hello", echo, appsNS)
		}
	})
	step("Service Backend")

	t.Run("FQDNBackendOriginatesTLS", func(t *testing.T) {
		res := eventuallyStatus(t, appsClient, gwURL+"/v1/ledger", partnerHost, http.StatusOK)
		if !strings.Contains(res.Body, "hello from partner-api") {
			t.Fatalf("body %q is not the outside API's", res.Body)
		}
		seen := upstream.Requests()
		last := seen[len(seen)-1]
		if !last.TLS || last.SNI != partnerHost || last.ClientCN != clientCN || last.Path != "/v1/ledger" {
			t.Fatalf("the outside API saw %+v, want TLS with SNI %s and client certificate %s", last, partnerHost, clientCN)
		}
		k.expectBackend(t, "partner-api", "AddressesResolved", metav1.ConditionTrue, "Resolved")
	})
	step("FQDN Backend")

	t.Run("MetadataAddressIsRefused", func(t *testing.T) {
		eventuallyStatus(t, appsClient, gwURL+"/latest/meta-data/", metadataHost, http.StatusServiceUnavailable)
		b := k.expectBackend(t, "metadata", "AddressesResolved", metav1.ConditionFalse, "AllAddressesForbidden")
		if len(b.Status.Addresses) != 0 || len(b.Status.BlockedAddresses) == 0 || b.Status.BlockedAddresses[0].IP != "169.254.169.254" {
			t.Fatalf("addresses %+v, blocked %+v: want none vetted and 169.254.169.254 blocked", b.Status.Addresses, b.Status.BlockedAddresses)
		}
	})
	step("metadata address refused")

	t.Run("TenantIsolation", func(t *testing.T) {
		// Another namespace's pod is a known caller with no route of its own.
		res := eventuallyStatus(t, otherClient, gwURL+"/hello", echoHost, http.StatusForbidden)
		if !strings.Contains(res.Body, "denied: no route for caller") {
			t.Fatalf("%s got body %q, want denied: no route for caller", otherNS, res.Body)
		}
		// This process is no pod: unknown caller.
		status, body := fetchFromHost(t, gwURL+"/hello", echoHost)
		if status != http.StatusForbidden || !strings.Contains(body, "denied: unknown caller") {
			t.Fatalf("from the host: %d %q, want 403 denied: unknown caller", status, body)
		}
	})
	step("tenant isolation")

	t.Run("NothingLeavesTheMachine", func(t *testing.T) {
		// The cluster's own guarantee (hack/cluster): pod traffic may not be forwarded
		// past the bridge, and the host DNS server answers only its own names.
		if _, err := fetchFromPod(appsClient, "http://1.1.1.1/", ""); err == nil || !strings.Contains(err.Error(), "unreachable") {
			t.Fatalf("GET http://1.1.1.1/ from a pod: %v, want network unreachable", err)
		}
		if _, err := fetchFromPod(appsClient, "http://example.com/", ""); err == nil || !strings.Contains(err.Error(), "no such host") {
			t.Fatalf("GET http://example.com/ from a pod: %v, want no such host", err)
		}
	})

	t.Run("AuditLogNamesTheClientPod", func(t *testing.T) {
		// The pod's own address reached Envoy through the Service (kube-proxy DNAT, no
		// SNAT), so the audit line names the pod.
		k.expectAuditLine(t, func(l auditLine) bool {
			return l.Caller.Namespace == appsNS && l.Caller.Pod == appsClient.Name && l.Caller.Address == appsClient.Status.PodIP &&
				l.Route == appsNS+"/partner-api" && l.Backend == appsNS+"/partner-api" && l.Decision == "allowed" &&
				l.ResponseCode == http.StatusOK && strings.HasPrefix(l.Upstream, externalIP+":")
		}, "an allowed request from "+appsNS+"/"+appsClient.Name+" to partner-api via "+externalIP)
		k.expectAuditLine(t, func(l auditLine) bool {
			return l.Caller.Namespace == otherNS && l.Caller.Pod == otherClient.Name && l.Decision == "denied: no route for caller"
		}, "a denied request from "+otherNS+"/"+otherClient.Name)
	})

	t.Run("NetworkPolicies", func(t *testing.T) {
		echoPods := k.waitPodsReady(appsNS, "app=echo")
		k.expectLockdownPolicy(t)
		k.expectEnvoyEgressPolicy(t, echoPods[0].Status.PodIP)
	})
	step("audit log and NetworkPolicies")

	t.Run("ManagerFailover", func(t *testing.T) { k.expectFailover(t, appsClient, gwURL) })
	step("manager failover")

	t.Run("XDSCertificateRotation", func(t *testing.T) { k.expectCertificateRotation(t, appsClient, gwURL) })
	step("xDS certificate rotation")
}

// serveOutsideAPI serves the outside API on externalIP:443 until the test ends.
func serveOutsideAPI(t *testing.T, cert testpki.Pair, ca *testpki.CA) *testupstream.Server {
	t.Helper()
	addr := net.JoinHostPort(externalIP, "443")
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("cannot serve the outside API on %s (make cluster-up puts %s on lo; port 443 needs root): %v", addr, externalIP, err)
	}
	ln.Close()
	return testupstream.Start(t, testupstream.Options{Addr: addr, Certificate: &cert.TLS, ClientCAs: ca.Pool(),
		ServerName: partnerHost, Name: "partner-api"})
}

func stepTimer(t *testing.T) func(string) {
	last := time.Now()
	return func(what string) {
		t.Logf("step %-35s %6.1fs", what, time.Since(last).Seconds())
		last = time.Now()
	}
}

func keyOf(namespace, name string) client.ObjectKey {
	return client.ObjectKey{Namespace: namespace, Name: name}
}

func (k *cluster) waitGatewayProgrammed() *gwapiv1.Gateway {
	k.t.Helper()
	gw := &gwapiv1.Gateway{}
	eventually(k.t, 3*time.Minute, "Gateway "+gatewayNS+"/"+gatewayName+" Programmed with an address", func() error {
		if err := k.c.Get(k.t.Context(), keyOf(gatewayNS, gatewayName), gw); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, string(gwapiv1.GatewayConditionProgrammed))
		if c == nil || c.Status != metav1.ConditionTrue || gatewayAddress(gw) == "" {
			return fmt.Errorf("conditions %+v, addresses %+v", gw.Status.Conditions, gw.Status.Addresses)
		}
		return nil
	})
	return gw
}

func (k *cluster) waitEnvoyReady() {
	k.t.Helper()
	deploy := "deployment/" + infra.ResourceName(gatewayName)
	if _, err := k.kubectl("-n", gatewayNS, "rollout", "status", deploy, "--timeout=3m"); err != nil {
		k.t.Fatalf("Envoy of the Gateway: %v\n%s", err, k.describe(gatewayNS))
	}
}

// waitPodsReady waits until the selector's pods are Ready and returns them.
func (k *cluster) waitPodsReady(namespace, selector string) []corev1.Pod {
	k.t.Helper()
	sel, err := labels.Parse(selector)
	if err != nil {
		k.t.Fatal(err)
	}
	var ready []corev1.Pod
	eventually(k.t, 3*time.Minute, "pods "+selector+" in "+namespace+" Ready", func() error {
		list := &corev1.PodList{}
		if err := k.c.List(k.t.Context(), list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return err
		}
		ready = ready[:0]
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && podReady(p) {
				ready = append(ready, p)
			}
		}
		if len(ready) == 0 {
			return fmt.Errorf("%d pods, none Ready\n%s", len(list.Items), k.describe(namespace))
		}
		return nil
	})
	return ready
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fetchResult is the probe's answer (hack/cluster/probe).
type fetchResult struct {
	Status int    `json:"status"`
	Body   string `json:"body"`
	Error  string `json:"error"`
}

// fetchFromPod asks the probe in pod to GET rawURL with Host host, from inside the pod.
func fetchFromPod(pod corev1.Pod, rawURL, host string) (fetchResult, error) {
	q := url.Values{"url": {rawURL}, "host": {host}}
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + net.JoinHostPort(pod.Status.PodIP, "8080") + "/fetch?" + q.Encode())
	if err != nil {
		return fetchResult{}, err
	}
	defer resp.Body.Close()
	var res fetchResult
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return fetchResult{}, fmt.Errorf("probe answer: %w", err)
	}
	if res.Error != "" {
		return res, fmt.Errorf("from pod %s/%s: %s", pod.Namespace, pod.Name, res.Error)
	}
	return res, nil
}

// eventuallyStatus retries until the request from pod gets want; configuration reaches
// Envoy a little after the objects are Programmed.
func eventuallyStatus(t *testing.T, pod corev1.Pod, rawURL, host string, want int) fetchResult {
	t.Helper()
	var res fetchResult
	eventually(t, 90*time.Second, fmt.Sprintf("GET %s Host %s from %s/%s gets %d", rawURL, host, pod.Namespace, pod.Name, want), func() error {
		var err error
		if res, err = fetchFromPod(pod, rawURL, host); err != nil {
			return err
		}
		if res.Status != want {
			return fmt.Errorf("status %d, body %q", res.Status, res.Body)
		}
		return nil
	})
	return res
}

func fetchFromHost(t *testing.T, rawURL, host string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	resp, err := (&http.Client{Timeout: 20 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// expectBackend waits until the Backend's condition has the status and reason.
func (k *cluster) expectBackend(t *testing.T, name, condition string, status metav1.ConditionStatus, reason string) *egressv1alpha1.Backend {
	t.Helper()
	b := &egressv1alpha1.Backend{}
	eventually(t, time.Minute, fmt.Sprintf("Backend %s %s=%s/%s", name, condition, status, reason), func() error {
		if err := k.c.Get(t.Context(), keyOf(appsNS, name), b); err != nil {
			return err
		}
		c := meta.FindStatusCondition(b.Status.Conditions, condition)
		if c == nil || c.Status != status || c.Reason != reason {
			return fmt.Errorf("conditions %+v", b.Status.Conditions)
		}
		return nil
	})
	return b
}

// auditLine is the part of an Envoy audit log line the test reads (README "Audit log").
type auditLine struct {
	Log    string `json:"log"`
	Caller struct {
		Address, Namespace, Pod string
	} `json:"caller"`
	Route        string `json:"route"`
	Backend      string `json:"backend"`
	Upstream     string `json:"upstream"`
	Decision     string `json:"decision"`
	ResponseCode int    `json:"responseCode"`
}

// expectAuditLine waits until an Envoy pod of the Gateway logged a line that matches.
func (k *cluster) expectAuditLine(t *testing.T, match func(auditLine) bool, what string) {
	t.Helper()
	sel := labels.SelectorFromSet(infra.SelectorLabels(gatewayNS, gatewayName)).String()
	eventually(t, 30*time.Second, "audit log line: "+what, func() error {
		pods, err := k.cs.CoreV1().Pods(gatewayNS).List(t.Context(), metav1.ListOptions{LabelSelector: sel})
		if err != nil {
			return err
		}
		var lines int
		for _, p := range pods.Items {
			logs, err := k.cs.CoreV1().Pods(gatewayNS).GetLogs(p.Name, &corev1.PodLogOptions{}).Stream(t.Context())
			if err != nil {
				return err
			}
			sc := bufio.NewScanner(logs)
			sc.Buffer(make([]byte, 64*1024), 1024*1024)
			for sc.Scan() {
				var l auditLine
				if json.Unmarshal(sc.Bytes(), &l) != nil || l.Log != "portcullis.audit.v1" {
					continue
				}
				lines++
				if match(l) {
					logs.Close()
					return nil
				}
			}
			logs.Close()
		}
		return fmt.Errorf("none of %d audit lines in %d Envoy pods matches", lines, len(pods.Items))
	})
}

// expectLockdownPolicy checks the policy the manager keeps in the locked-down
// namespace: egress to the Envoy pods on the listener's Envoy port, and to cluster DNS.
func (k *cluster) expectLockdownPolicy(t *testing.T) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	eventually(t, 30*time.Second, "NetworkPolicy "+controllers.LockdownPolicyName, func() error {
		return k.c.Get(t.Context(), keyOf(appsNS, controllers.LockdownPolicyName), np)
	})
	spec := np.Spec
	if len(spec.PodSelector.MatchLabels)+len(spec.PodSelector.MatchExpressions) != 0 ||
		!slices.Equal(spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}) || len(spec.Egress) != 2 {
		t.Fatalf("lockdown policy spec %+v: want every pod, Egress only, two rules", spec)
	}
	envoy, dns := spec.Egress[0], spec.Egress[1]
	if len(envoy.To) != 1 || envoy.To[0].PodSelector == nil || envoy.To[0].PodSelector.MatchLabels["app.kubernetes.io/name"] != "portcullis-envoy" ||
		!slices.Equal(rulePorts(envoy), []string{"TCP/10080"}) {
		t.Fatalf("first rule %+v: want the Envoy pods on TCP/10080 (listener port 80)", envoy)
	}
	if len(dns.To) != 1 || dns.To[0].PodSelector == nil || dns.To[0].PodSelector.MatchLabels["k8s-app"] != "kube-dns" ||
		!slices.Equal(rulePorts(dns), []string{"UDP/53", "TCP/53"}) {
		t.Fatalf("second rule %+v: want kube-dns on UDP/53 and TCP/53", dns)
	}
}

// expectEnvoyEgressPolicy checks the Envoy pods' own egress: the manager's xDS port,
// cluster DNS, the echo pod and the vetted outside address on their ports, and never
// the metadata address.
func (k *cluster) expectEnvoyEgressPolicy(t *testing.T, echoPodIP string) {
	t.Helper()
	name := controllers.EnvoyEgressPolicyName(gatewayName)
	np := &networkingv1.NetworkPolicy{}
	want := map[string][]string{echoPodIP + "/32": {"TCP/3000"}, externalIP + "/32": {"TCP/443"}}
	eventually(t, 30*time.Second, "NetworkPolicy "+gatewayNS+"/"+name+" allows "+fmt.Sprint(want), func() error {
		if err := k.c.Get(t.Context(), keyOf(gatewayNS, name), np); err != nil {
			return err
		}
		got := map[string][]string{}
		for _, r := range np.Spec.Egress {
			for _, peer := range r.To {
				if peer.IPBlock != nil {
					got[peer.IPBlock.CIDR] = append(got[peer.IPBlock.CIDR], rulePorts(r)...)
				}
			}
		}
		for cidr, ports := range want {
			if !slices.Equal(got[cidr], ports) {
				return fmt.Errorf("ipBlocks %v", got)
			}
		}
		for cidr := range got {
			if strings.HasPrefix(cidr, "169.254.") {
				return fmt.Errorf("the metadata address is allowed: %v", got)
			}
		}
		return nil
	})
	if !maps.Equal(np.Spec.PodSelector.MatchLabels, infra.SelectorLabels(gatewayNS, gatewayName)) {
		t.Fatalf("podSelector %+v: want the Gateway's Envoy pods", np.Spec.PodSelector)
	}
	xds := np.Spec.Egress[0]
	if len(xds.To) != 1 || xds.To[0].NamespaceSelector == nil || xds.To[0].NamespaceSelector.MatchLabels[corev1.LabelMetadataName] != "portcullis-system" ||
		!slices.Equal(rulePorts(xds), []string{"TCP/18000"}) {
		t.Fatalf("first rule %+v: want the manager pods in portcullis-system on TCP/18000", xds)
	}
	if !slices.Equal(rulePorts(np.Spec.Egress[1]), []string{"UDP/53", "TCP/53"}) {
		t.Fatalf("second rule %+v: want cluster DNS", np.Spec.Egress[1])
	}
}

func rulePorts(r networkingv1.NetworkPolicyEgressRule) []string {
	var out []string
	for _, p := range r.Ports {
		proto := corev1.ProtocolTCP
		if p.Protocol != nil {
			proto = *p.Protocol
		}
		out = append(out, fmt.Sprintf("%s/%s", proto, p.Port.String()))
	}
	return out
}
