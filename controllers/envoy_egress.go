package controllers

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/controllers/infra"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// EnvoyEgress configures the NetworkPolicy that confines each Gateway's Envoy pods to the
// xDS server, cluster DNS (the xDS Service name) and the addresses the DNS guard vetted
// for the destinations the Gateway serves. A NetworkPolicy is enforced by the network
// plugin, below Envoy: even a misconfigured or compromised Envoy cannot reach anything
// else.
type EnvoyEgress struct {
	// ManagerNamespace and ManagerPodLabels select the manager pods serving xDS.
	ManagerNamespace string
	ManagerPodLabels map[string]string
	// XDSPort is the port the manager pods serve xDS on.
	XDSPort int32
}

// DefaultManagerPodLabels are the labels of the manager pods in config/manager, which the
// Envoy egress policies allow xDS traffic to (`portcullis manager --manager-pod-labels`).
const DefaultManagerPodLabels = "app.kubernetes.io/name=portcullis,app.kubernetes.io/component=controller-manager"

// EnvoyEgressPolicyName is the name of a Gateway's Envoy egress NetworkPolicy.
func EnvoyEgressPolicyName(gateway string) string { return infra.ResourceName(gateway) + "-egress" }

// allowedEndpoints are the destination addresses of an Envoy egress policy: CIDR (/32 or
// /128) to the TCP ports allowed there.
type allowedEndpoints map[string]map[int32]bool

// widenEnvoyEgress runs before a Gateway's new snapshot is published: the policy then
// allows both the addresses in force now and the new ones, so Envoy never gets an
// endpoint its pod may not reach, and old connections keep working until Envoy has
// moved to the new configuration. The addresses in force are read from the policy being
// updated, so that a write that conflicts is done again from what the API server holds
// (writeEnvoyPolicy), never from a stale copy that would drop an address in use.
func (r *Reconciler) widenEnvoyEgress(ctx context.Context, gw ir.Gateway, obj *gwapiv1.Gateway) error {
	if r.opts.EnvoyEgress == nil || obj == nil {
		return nil
	}
	return r.writeEnvoyPolicy(ctx, obj, EnvoyEgressPolicyName(obj.Name), func(current *networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec {
		allowed := endpointsOf(gw)
		for cidr, ports := range endpointsInPolicy(current) {
			allowed.add(cidr, slices.Collect(maps.Keys(ports))...)
		}
		return envoyEgressSpec(*r.opts.EnvoyEgress, obj, allowed)
	})
}

// narrowEnvoyEgress runs after Envoy acknowledged a Gateway's snapshot (or when no Envoy
// of it is connected): the policy then allows exactly the addresses in force. A Gateway
// whose new configuration was not published keeps the wider policy, since its Envoys
// still run the last good snapshot.
func (r *Reconciler) narrowEnvoyEgress(ctx context.Context, gateways []ir.Gateway, objs map[string]*gwapiv1.Gateway, problems map[string]error) error {
	if r.opts.EnvoyEgress == nil {
		return nil
	}
	var errs []error
	for _, gw := range gateways {
		obj := objs[gw.Name]
		if obj == nil || problems[gw.Name] != nil || !r.envoysMovedOn(gw.Name) {
			continue
		}
		if last, ok := r.lastPublished[gw.Name]; ok {
			gw = last // retiring clusters included
		}
		if err := r.writeEnvoyEgress(ctx, obj, endpointsOf(gw)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// envoysMovedOn tells whether no Envoy of the Gateway can still be using an address of an
// older snapshot: each acknowledged the published one, or none is connected.
func (r *Reconciler) envoysMovedOn(gateway string) bool {
	st := r.opts.XDS.Status(gateway)
	if st.Version == "" {
		return false
	}
	ok, _, _ := st.Programmed()
	return ok || len(st.Envoys) == 0
}

func (r *Reconciler) writeEnvoyEgress(ctx context.Context, obj *gwapiv1.Gateway, allowed allowedEndpoints) error {
	return r.writeEnvoyPolicy(ctx, obj, EnvoyEgressPolicyName(obj.Name), fixedSpec(envoyEgressSpec(*r.opts.EnvoyEgress, obj, allowed)))
}

// fixedSpec is writeEnvoyPolicy's specFor for a spec that does not depend on the policy
// as it is.
func fixedSpec(spec networkingv1.NetworkPolicySpec) func(*networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec {
	return func(*networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec { return spec }
}

// writeEnvoyPolicy creates or updates one NetworkPolicy of a Gateway's Envoy pods,
// owned by the Gateway, with the spec specFor makes from the policy as it is (empty
// when there is none). The policy is read from the informer cache, which may not yet
// hold the manager's own last write: the API server then refuses the update as a
// conflict (or the create as a duplicate), and the write is done again from a new read
// of the cache, which has usually caught up by then. Should every attempt fail, the
// Gateway's new configuration is held back and the reconcile retried (held_back.go).
func (r *Reconciler) writeEnvoyPolicy(ctx context.Context, obj *gwapiv1.Gateway, name string, specFor func(current *networkingv1.NetworkPolicy) networkingv1.NetworkPolicySpec) error {
	key := client.ObjectKey{Name: name, Namespace: obj.Namespace}
	err := retry.OnError(retry.DefaultRetry, staleRead, func() error {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
		_, err := controllerutil.CreateOrUpdate(ctx, r.client, np, func() error {
			np.Labels = infra.Labels(obj.Namespace, obj.Name)
			np.Spec = specFor(np)
			return controllerutil.SetOwnerReference(obj, np, r.client.Scheme())
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the NetworkPolicy %s/%s of the Envoy pods: %w", key.Namespace, key.Name, err)
	}
	return nil
}

// staleRead tells whether a write failed because the copy it started from was stale.
func staleRead(err error) bool { return apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) }

// deleteEnvoyPolicies removes a Gateway's Envoy policies (owner references would, but
// not on an API server without a garbage collector, and not before the Gateway is gone).
func (r *Reconciler) deleteEnvoyPolicies(ctx context.Context, namespace, name string) error {
	if r.opts.EnvoyEgress == nil {
		return nil
	}
	var errs []error
	for _, policy := range []string{EnvoyEgressPolicyName(name), EnvoyIngressPolicyName(name)} {
		np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: policy, Namespace: namespace}}
		errs = append(errs, client.IgnoreNotFound(r.client.Delete(ctx, np)))
	}
	return errors.Join(errs...)
}

// envoyEgressSpec allows the Envoy pods of a Gateway egress to the xDS server, to cluster
// DNS and to the allowed addresses, and nothing else.
func envoyEgressSpec(opts EnvoyEgress, gw *gwapiv1.Gateway, allowed allowedEndpoints) networkingv1.NetworkPolicySpec {
	tcp := corev1.ProtocolTCP
	xdsPort := intstr.FromInt32(opts.XDSPort)
	xds := networkingv1.NetworkPolicyEgressRule{
		To: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: opts.ManagerNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: opts.ManagerPodLabels},
		}},
		Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &xdsPort}},
	}
	dns := lockdownSpec(nil).Egress[0] // with no Gateway: the DNS rule alone
	return networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: infra.SelectorLabels(gw.Namespace, gw.Name)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress:      append([]networkingv1.NetworkPolicyEgressRule{xds, dns}, allowed.rules()...),
	}
}

// endpointsOf lists every endpoint of every cluster of a Gateway: the vetted addresses of
// FQDN Backends, IP Backends, and Service endpoints.
func endpointsOf(gw ir.Gateway) allowedEndpoints {
	out := allowedEndpoints{}
	for _, c := range gw.Clusters {
		for _, e := range c.Endpoints {
			addr, err := netip.ParseAddr(e.Address)
			if err != nil {
				continue // not an address: Envoy is given IP endpoints only
			}
			out.add(netip.PrefixFrom(addr.Unmap(), addr.Unmap().BitLen()).String(), int32(e.Port))
		}
	}
	return out
}

// endpointsInPolicy reads the ipBlock rules back from a policy this file wrote.
func endpointsInPolicy(np *networkingv1.NetworkPolicy) allowedEndpoints {
	out := allowedEndpoints{}
	for _, rule := range np.Spec.Egress {
		var ports []int32
		for _, p := range rule.Ports {
			if p.Port != nil && p.Port.Type == intstr.Int {
				ports = append(ports, p.Port.IntVal)
			}
		}
		for _, peer := range rule.To {
			if peer.IPBlock != nil {
				out.add(peer.IPBlock.CIDR, ports...)
			}
		}
	}
	return out
}

// add allows ports at cidr; with no port it adds nothing (a rule without ports would
// allow every port).
func (a allowedEndpoints) add(cidr string, ports ...int32) {
	if len(ports) == 0 {
		return
	}
	if a[cidr] == nil {
		a[cidr] = map[int32]bool{}
	}
	for _, p := range ports {
		a[cidr][p] = true
	}
}

// rules groups addresses that share the same ports into one rule, in a deterministic
// order, so an unchanged set writes an identical policy.
func (a allowedEndpoints) rules() []networkingv1.NetworkPolicyEgressRule {
	byPorts := map[string][]string{}
	for cidr, ports := range a {
		key := portsKey(ports)
		byPorts[key] = append(byPorts[key], cidr)
	}
	tcp := corev1.ProtocolTCP
	out := make([]networkingv1.NetworkPolicyEgressRule, 0, len(byPorts))
	for _, key := range slices.Sorted(maps.Keys(byPorts)) {
		cidrs := byPorts[key]
		slices.SortFunc(cidrs, compareCIDR)
		rule := networkingv1.NetworkPolicyEgressRule{}
		for _, cidr := range cidrs {
			rule.To = append(rule.To, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}})
		}
		for _, p := range strings.Split(key, ",") {
			n, _ := strconv.Atoi(p)
			port := intstr.FromInt32(int32(n))
			rule.Ports = append(rule.Ports, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &port})
		}
		out = append(out, rule)
	}
	return out
}

func portsKey(ports map[int32]bool) string {
	sorted := slices.Sorted(maps.Keys(ports))
	parts := make([]string, len(sorted))
	for i, p := range sorted {
		parts[i] = strconv.Itoa(int(p))
	}
	return strings.Join(parts, ",")
}

func compareCIDR(a, b string) int {
	pa, errA := netip.ParsePrefix(a)
	pb, errB := netip.ParsePrefix(b)
	if errA != nil || errB != nil {
		return strings.Compare(a, b)
	}
	return cmp.Or(pa.Addr().Compare(pb.Addr()), cmp.Compare(pa.Bits(), pb.Bits()))
}
