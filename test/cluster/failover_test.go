//go:build cluster

package cluster

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

const (
	managerNS       = "portcullis-system"
	managerSelector = "app.kubernetes.io/name=portcullis,app.kubernetes.io/component=controller-manager"
	leaseName       = "portcullis-manager.portcullis.io"
	// statusDeadline is how soon after the leader dies another replica must write a
	// status (issue: within 15 s).
	statusDeadline = 15 * time.Second
)

// expectFailover kills the leading manager replica while a client pod keeps sending
// requests through the Gateway (to the Service and the FQDN Backend), then checks that
// no request failed, another replica wrote a new Backend's status within
// statusDeadline, and the Gateway stayed Programmed.
func (k *cluster) expectFailover(t *testing.T, client corev1.Pod, gwURL string) {
	replicas := k.waitPodsReady(managerNS, managerSelector)
	if len(replicas) != 2 {
		t.Fatalf("%d manager replicas Ready, want 2 (config/manager sets replicas: 2)", len(replicas))
	}
	leader := k.leaseHolder(t)
	load := startLoad(client, gwURL)

	killed := time.Now()
	if _, err := k.kubectl("-n", managerNS, "delete", "pod", leader, "--wait=false"); err != nil {
		t.Fatal(err)
	}
	k.apply(failoverProbeYAML)
	eventually(t, statusDeadline, "a replica writes the status of Backend failover-probe", func() error {
		b := &egressv1alpha1.Backend{}
		if err := k.c.Get(t.Context(), keyOf(appsNS, "failover-probe"), b); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, egressv1alpha1.ConditionAccepted); c == nil || c.ObservedGeneration != b.Generation {
			return fmt.Errorf("no Accepted condition for generation %d yet: %+v", b.Generation, b.Status.Conditions)
		}
		return nil
	})
	t.Logf("status of a new Backend written %s after the leader %s was deleted", time.Since(killed).Round(100*time.Millisecond), leader)
	if now := k.leaseHolder(t); now == leader {
		t.Fatalf("the lease is still held by the deleted replica %s", leader)
	}

	if _, err := k.kubectl("-n", managerNS, "rollout", "status", "deployment/portcullis-controller-manager", "--timeout=3m"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the replacement replica serves Envoys that reconnect to it
	ok, failures := load.stop()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed during the failover, first: %s", len(failures), ok+len(failures), failures[0])
	}
	if ok < 20 {
		t.Fatalf("only %d requests were sent during the failover; the test proves nothing", ok)
	}
	t.Logf("%d requests, none failed, while the leader was replaced", ok)
	k.expectGatewayProgrammed(t)
}

// leaseHolder is the Pod name of the replica holding the manager's lease.
func (k *cluster) leaseHolder(t *testing.T) string {
	t.Helper()
	var holder string
	eventually(t, time.Minute, "a manager replica holds the lease", func() error {
		l := &coordinationv1.Lease{}
		if err := k.c.Get(t.Context(), keyOf(managerNS, leaseName), l); err != nil {
			return err
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			return fmt.Errorf("lease %s has no holder", leaseName)
		}
		holder, _, _ = strings.Cut(*l.Spec.HolderIdentity, "_")
		return nil
	})
	return holder
}

// expectGatewayProgrammed checks the Gateway reads Programmed=True now, whichever
// replicas its Envoys are connected to.
func (k *cluster) expectGatewayProgrammed(t *testing.T) {
	t.Helper()
	eventually(t, 30*time.Second, "Gateway Programmed after the failover", func() error {
		gw := &gwapiv1.Gateway{}
		if err := k.c.Get(t.Context(), keyOf(gatewayNS, gatewayName), gw); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(gw.Status.Conditions, string(gwapiv1.GatewayConditionProgrammed)); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Programmed: %+v", c)
		}
		return nil
	})
}

// load sends requests from a client pod through the Gateway until stopped, alternating
// the Service Backend and the FQDN Backend, and counts what did not get 200.
type load struct {
	done     chan struct{}
	wg       sync.WaitGroup
	ok       int
	failures []string
}

func startLoad(client corev1.Pod, gwURL string) *load {
	l := &load{done: make(chan struct{})}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		targets := []struct{ path, host string }{{"/hello", echoHost}, {"/v1/ledger", partnerHost}}
		for i := 0; ; i++ {
			select {
			case <-l.done:
				return
			case <-time.After(100 * time.Millisecond):
			}
			tg := targets[i%len(targets)]
			res, err := fetchFromPod(client, gwURL+tg.path, tg.host)
			switch {
			case err != nil:
				l.failures = append(l.failures, fmt.Sprintf("%s %s: %v", tg.host, tg.path, err))
			case res.Status != 200:
				l.failures = append(l.failures, fmt.Sprintf("%s %s: %d %q", tg.host, tg.path, res.Status, res.Body))
			default:
				l.ok++
			}
		}
	}()
	return l
}

func (l *load) stop() (int, []string) {
	close(l.done)
	l.wg.Wait()
	return l.ok, l.failures
}

const failoverProbeYAML = `apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: failover-probe, namespace: ` + appsNS + `}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: ` + partnerHost + `}
    ports: [{name: http, port: 80, protocol: HTTP}]
`
