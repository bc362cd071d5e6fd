package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestPublishWaitsForTheLastSnapshotsACK: while the Envoy of a Gateway has not
// acknowledged the last snapshot, the next one waits (a burst of changes is not a burst
// of full updates Envoy cannot keep up with), but only until publishHold after the last
// one: an Envoy that never acknowledges delays its Gateway, it does not stop it.
func TestPublishWaitsForTheLastSnapshotsACK(t *testing.T) {
	hold := publishHold
	publishHold = 3 * time.Second // room for a loaded machine between the steps below
	t.Cleanup(func() { publishHold = hold })
	w := newWorld(t)
	const ns, gateway = "paced", "paced/egress"
	w.dns.Set("a.paced.test", "a.paced.test. 60 IN A 127.0.0.1")
	w.dns.Set("b.paced.test", "b.paced.test. 60 IN A 127.0.0.1")
	connectStuckEnvoy(t, w.xdsPort, gateway) // receives everything, acknowledges nothing
	backend := func(name string) string {
		return fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: %[1]s.paced.test}
    ports: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %[1]s, namespace: %[2]s}
spec:
  parentRefs: [{name: egress}]
  hostnames: [%[1]s.paced.test]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: %[1]s}]}]
`, name, ns)
	}
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + backend("a"))
	first := w.waitPublished(gateway, "", 20*time.Second)
	applied := time.Now()
	w.apply(backend("b"))
	time.Sleep(time.Second)
	if v := w.xds.Status(gateway).Version; v != first {
		t.Fatalf("a new snapshot (%s) was published %v after the change although the Envoy had not acknowledged the last one (%s) yet",
			v, time.Since(applied).Round(time.Millisecond), first)
	}
	w.waitPublished(gateway, first, 20*time.Second)
	t.Logf("the next snapshot came %v after the change", time.Since(applied).Round(100*time.Millisecond))
}

// waitPublished waits until the Gateway's published version is set and differs from
// not, and returns it.
func (w *world) waitPublished(gateway, not string, timeout time.Duration) string {
	w.t.Helper()
	var v string
	xdstest.WaitFor(w.t, timeout, "a snapshot of "+gateway+" other than "+fmt.Sprintf("%q", not), func() error {
		if v = w.xds.Status(gateway).Version; v == "" || v == not {
			return fmt.Errorf("published %q", v)
		}
		return nil
	})
	return v
}
