package samples

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// Bounds of the waits for promised conditions: generous, because the first ones wait
// for Envoy to start and acknowledge on a loaded two-core machine, yet bounded overall,
// so a broken manager fails the test in minutes rather than once per expectation.
const (
	perSampleTimeout = time.Minute
	overallTimeout   = 4 * time.Minute
	recheckTimeout   = 30 * time.Second
)

// TestSamplesReachTheirPromisedConditions follows the samples as a user would: for each
// samples/*.yaml in order, it creates what the file requires with the commands its
// header gives, applies the file with kubectl, and waits for every "# expect:" line;
// once all are applied it checks every promise again, so no later sample broke an
// earlier one. The API server is watched by the real manager. Its DNS guard asks a
// test DNS server that answers the samples' outside names with 127.0.0.1 (allowed here,
// test only) and nip.io-style names with the address they spell, as the public service
// does. The one test-only change to a file: a Gateway's listeners listen on free ports
// instead of 8080, 443 or 5432, which the host provider would bind on this machine.
func TestSamplesReachTheirPromisedConditions(t *testing.T) {
	api := startAPIServer(t)
	samples := loadSamples(t, samplesDir(t))
	dns := dnstest.NewServer(t)
	answers := answerSampleNames(dns, samples)
	m := startManager(t, api, dns.Addr())
	k := newKubectl(t, api)
	keys := newMaterial(t)

	start := time.Now()
	overall := start.Add(overallTimeout)
	for _, s := range samples {
		t.Run(s.name, func(t *testing.T) {
			for _, r := range s.requires {
				k.create(t, r, keys)
			}
			path, port := withFreeGatewayPorts(t, s)
			if path != s.path {
				t.Logf("applying a copy whose Gateway listeners use free ports (%d instead of %d; test only)", port, samplePort)
			}
			k.apply(t, path)
			expectAll(t, api.Client, s, earliest(time.Now().Add(perSampleTimeout), overall))
			for _, args := range s.waitCommands() {
				if out, err := k.run(t, append(args, "--timeout=30s")...); err != nil {
					t.Errorf("the header's kubectl %s failed: %v\n%s", strings.Join(args, " "), err, out)
				}
			}
		})
	}
	t.Run("all applied", func(t *testing.T) {
		deadline := time.Now().Add(recheckTimeout)
		for _, s := range samples {
			expectAll(t, api.Client, s, deadline)
		}
	})
	t.Logf("%d samples applied and their promises met in %s", len(samples), time.Since(start).Round(time.Millisecond))
	assertEveryNameWasResolved(t, dns, answers)
	assertEnvoyIsPinnedToVettedAddresses(t, m)
	assertNoSecretLeaked(t, api, m, k, keys)
	if t.Failed() {
		dumpLogs(t, m)
	}
}

// expectAll waits for each of the sample's expectations, reporting every one not met.
func expectAll(t *testing.T, c client.Client, s *sample, deadline time.Time) {
	t.Helper()
	for _, e := range s.expects {
		begin := time.Now()
		if err := waitExpectation(c, e, deadline); err != nil {
			t.Errorf("%s: expect %s: %v", s.name, e.line, err)
			continue
		}
		t.Logf("expect %s: met after %s", e.line, time.Since(begin).Round(time.Millisecond))
	}
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// waitExpectation polls the object until it meets the expectation or the deadline
// passes, and then says what it last saw.
func waitExpectation(c client.Client, e expectation, deadline time.Time) error {
	for {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(e.kind.gvk)
		err := c.Get(context.Background(), client.ObjectKey{Namespace: e.namespace, Name: e.name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			err = errors.New("the object does not exist")
		case err == nil:
			err = e.verify(obj)
		}
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not met in time: %w", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// gatewayLatency says how long the shared Gateway took from creation to Programmed
// (Envoy started and acknowledged), to the second the API server records.
func gatewayLatency(t *testing.T, c client.Client) string {
	t.Helper()
	gw := &unstructured.Unstructured{}
	gw.SetGroupVersionKind(kinds["Gateway"].gvk)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "egress-gateway", Name: "egress"}, gw); err != nil {
		return err.Error()
	}
	conds, _, _ := unstructured.NestedSlice(gw.Object, "status", "conditions")
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		if cond["type"] != "Programmed" {
			continue
		}
		at, err := time.Parse(time.RFC3339, fmt.Sprint(cond["lastTransitionTime"]))
		if err != nil {
			return err.Error()
		}
		return fmt.Sprintf("the Gateway was Programmed %s after it was created", at.Sub(gw.GetCreationTimestamp().Time))
	}
	return "the Gateway has no Programmed condition"
}

// assertEveryNameWasResolved: the statuses come from the guard's own resolution of each
// sample name, not from somewhere else.
func assertEveryNameWasResolved(t *testing.T, dns *dnstest.Server, answers map[string]string) {
	t.Helper()
	for name, answer := range answers {
		if dns.Queries(name) == 0 {
			t.Errorf("the DNS guard never asked for %s (answer %s)", name, answer)
		}
	}
}

// assertNoSecretLeaked: the client private key and the injected token the samples
// required appear in no manager log line (any verbosity), no Envoy log, no kubectl
// output, and no status or Event the manager wrote.
func assertNoSecretLeaked(t *testing.T, api *testenv.APIServer, m *manager, k *kubectl, keys *material) {
	t.Helper()
	places := map[string]string{
		"the manager's logs": strings.Join(m.logs.Lines(), "\n"),
		"kubectl's output":   k.transcript.String(),
		"Backend statuses":   listJSON(t, api, "egress.portcullis.io", "v1alpha1", "BackendList"),
		"Events":             listJSON(t, api, "", "v1", "EventList"),
	}
	for path, text := range m.envoyLogs(t) {
		places[path] = text
	}
	if len(m.envoyLogs(t)) == 0 {
		t.Error("no Envoy log found: the host provider ran no Envoy")
	}
	keyLine := strings.Split(string(keys.keyPEM), "\n")[1] // the first base64 line of the key
	for where, text := range places {
		if strings.Contains(text, keys.token) {
			t.Errorf("the injected credential appears in %s", where)
		}
		if strings.Contains(text, keyLine) {
			t.Errorf("the client private key appears in %s", where)
		}
	}
}

func listJSON(t *testing.T, api *testenv.APIServer, group, version, kind string) string {
	t.Helper()
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: version, Kind: kind})
	if err := api.Client.List(context.Background(), list); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(list.Object)
	if err != nil {
		t.Fatal(err)
	}
	items, err := json.Marshal(list.Items)
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + string(items)
}

// dumpLogs shows the end of the manager's and each Envoy's log after a failure.
func dumpLogs(t *testing.T, m *manager) {
	t.Helper()
	lines := m.logs.Lines()
	t.Logf("last manager log lines:\n%s", strings.Join(lines[max(0, len(lines)-80):], "\n"))
	for path, text := range m.envoyLogs(t) {
		t.Logf("%s (last 4000 bytes):\n%s", path, text[max(0, len(text)-4000):])
	}
}
