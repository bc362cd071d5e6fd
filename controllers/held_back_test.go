package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestHeldBackConfigurationIsSentWithoutAnotherChange: while the API server refuses to
// update a Gateway's Envoy egress NetworkPolicy (here a ValidatingAdmissionPolicy; in
// life a conflict with a stale cache, an outage, a webhook), the Gateway's new
// configuration is held back: Envoy keeps the address it has. Once the API server takes
// the write again, the manager sends the new configuration by itself, although no
// object it watches changed since the change that made it.
func TestHeldBackConfigurationIsSentWithoutAnotherChange(t *testing.T) {
	w := newWorld(t, func(o *Options) { o.EnvoyEgress = &testEnvoyEgress })
	const ns, hostname, upstreamPort = "held-back", "held.egress.test", 9080
	envoy := w.egressToFQDN(ns, hostname, upstreamPort)
	key := types.NamespacedName{Namespace: ns, Name: EnvoyEgressPolicyName("egress")}
	old, next := fmt.Sprintf("127.0.0.1:%d", upstreamPort), fmt.Sprintf("127.0.0.2:%d", upstreamPort)
	waitEnvoyPolicy(t, w.c, key, []string{"127.0.0.1/32"})
	xdstest.WaitFor(t, 10*time.Second, "Envoy has the first address", func() error { return envoyHas(envoy, old, true) })

	binding := w.apply(refuseNetworkPolicyUpdates(ns))[1]
	waitRefused(t, w.c, key)
	w.dns.Set(hostname, hostname+". 1 IN A 127.0.0.2")
	time.Sleep(2 * time.Second) // the reconcile the answer brings, and its retries
	if err := errors.Join(envoyHas(envoy, old, true), envoyHas(envoy, next, false)); err != nil {
		t.Fatalf("the policy could not be widened, yet Envoy was sent the new address: %v", err)
	}
	xdstest.WaitFor(t, 10*time.Second, "the Gateway to say why its configuration is held back", func() error {
		gw := &gwapiv1.Gateway{}
		if err := w.c.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "egress"}, gw); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, string(gwapiv1.GatewayConditionProgrammed))
		if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "NetworkPolicy could not be written") {
			return fmt.Errorf("Programmed is %+v", c)
		}
		return nil
	})

	if err := w.c.Delete(context.Background(), binding); err != nil {
		t.Fatal(err)
	}
	xdstest.WaitFor(t, 20*time.Second, "Envoy has the new address once the policy can be written", func() error {
		return envoyHas(envoy, next, true)
	})
	waitEnvoyPolicy(t, w.c, key, []string{"127.0.0.2/32"})
}

// refuseNetworkPolicyUpdates is a ValidatingAdmissionPolicy and its binding (second)
// that refuse every update of a NetworkPolicy in ns.
func refuseNetworkPolicyUpdates(ns string) string {
	return fmt.Sprintf(`
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: refuse-updates-%[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [networking.k8s.io], apiVersions: [v1], operations: [UPDATE], resources: [networkpolicies]}
  validations: [{expression: "false", message: "NetworkPolicy updates are refused by the test"}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: refuse-updates-%[1]s}
spec:
  policyName: refuse-updates-%[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[1]s}}
`, ns)
}

// waitRefused waits until the API server applies the admission policy (it loads
// policies asynchronously): a dry-run update of the NetworkPolicy is refused.
func waitRefused(t *testing.T, c client.Client, key types.NamespacedName) {
	t.Helper()
	xdstest.WaitFor(t, 20*time.Second, "NetworkPolicy updates to be refused", func() error {
		np := &networkingv1.NetworkPolicy{}
		if err := c.Get(context.Background(), key, np); err != nil {
			return err
		}
		err := c.Update(context.Background(), np, client.DryRunAll)
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return nil
		}
		return fmt.Errorf("a dry-run update returned %v", err)
	})
}

// TestEnvoyPolicyWriteStartsAgainFromAFreshRead: the informer cache may not hold the
// manager's own last write, so the update it starts from is refused as a conflict. The
// widening is then done again from what the API server holds, keeping the address the
// write in between allowed, instead of failing the Gateway's publish.
func TestEnvoyPolicyWriteStartsAgainFromAFreshRead(t *testing.T) {
	ctx := context.Background()
	const ns = "stale-policy-read"
	gw := createGateway(t, ns)
	key := types.NamespacedName{Namespace: ns, Name: EnvoyEgressPolicyName("egress")}
	direct, err := client.NewWithWatch(api.Config, client.Options{Scheme: api.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	var conflicts int
	c := interceptor.NewClient(direct, interceptor.Funcs{
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if conflicts == 0 {
				// Another write lands between the read and this update.
				live := &networkingv1.NetworkPolicy{}
				if err := c.Get(ctx, key, live); err != nil {
					return err
				}
				live.Spec = envoyEgressSpec(testEnvoyEgress, gw, allowedEndpoints{"10.0.0.9/32": {80: true}, "10.0.0.1/32": {80: true}})
				if err := c.Update(ctx, live); err != nil {
					return err
				}
			}
			err := c.Update(ctx, obj, opts...)
			if apierrors.IsConflict(err) {
				conflicts++
			}
			return err
		},
	})
	r := &Reconciler{client: c, opts: Options{EnvoyEgress: &testEnvoyEgress}}
	if err := r.widenEnvoyEgress(ctx, gatewayWithEndpoint("10.0.0.1"), gw); err != nil {
		t.Fatalf("first widening: %v", err)
	}
	if err := r.widenEnvoyEgress(ctx, gatewayWithEndpoint("10.0.0.2"), gw); err != nil {
		t.Fatalf("the widening that started from a stale copy failed: %v", err)
	}
	if conflicts != 1 {
		t.Fatalf("%d conflicts, want the one the write in between made", conflicts)
	}
	np := &networkingv1.NetworkPolicy{}
	if err := api.Client.Get(ctx, key, np); err != nil {
		t.Fatal(err)
	}
	if got, want := policyCIDRs(np), []string{"10.0.0.1/32", "10.0.0.2/32", "10.0.0.9/32"}; !slices.Equal(got, want) {
		t.Fatalf("the policy allows %v, want %v: the address the write in between allowed is kept", got, want)
	}
}

// createGateway creates the namespace ns and a Gateway egress in it (an owner for the
// policies; nothing reconciles it).
func createGateway(t *testing.T, ns string) *gwapiv1.Gateway {
	t.Helper()
	ctx := context.Background()
	if err := api.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	gw := &gwapiv1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns},
		Spec: gwapiv1.GatewaySpec{GatewayClassName: "not-ours", Listeners: []gwapiv1.Listener{{Name: "http", Port: 80, Protocol: gwapiv1.HTTPProtocolType}}}}
	if err := api.Client.Create(ctx, gw); err != nil {
		t.Fatal(err)
	}
	return gw
}

// gatewayWithEndpoint is a translated Gateway with one cluster sending to addr:80.
func gatewayWithEndpoint(addr string) ir.Gateway {
	return ir.Gateway{Clusters: []*ir.Cluster{{Name: "backend/x/api/http", Endpoints: []ir.Endpoint{{Address: addr, Port: 80}}}}}
}
