package controllers

import (
	"slices"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// maxANPPortsPerRule is AdminNetworkPolicy's limit of ports in one rule.
const maxANPPortsPerRule = 100

// adminNetworkPolicySpec is the lockdown as an AdminNetworkPolicy (v1alpha1): the same
// rules as the ClusterNetworkPolicy, in that API's words (Allow for Accept, ports as
// portNumber). An AdminNetworkPolicy is evaluated before every NetworkPolicy, its rules
// in order. The networks peer, needed to deny the outside, is in the API from v0.1.5.
func adminNetworkPolicySpec(gateways []ir.Gateway) map[string]any {
	var rules []any
	envoys := envoyPodsPeer(gateways)
	for chunk := range slices.Chunk(envoyListenerPorts(gateways), maxANPPortsPerRule) {
		var ports []any
		for _, p := range chunk {
			ports = append(ports, portNumber("TCP", p))
		}
		rules = append(rules, map[string]any{"name": "to-gateways", "action": "Allow", "to": []any{envoys}, "ports": ports})
	}
	rules = append(rules,
		map[string]any{"name": "to-cluster-dns", "action": "Allow",
			"to":    []any{clusterDNSPods()},
			"ports": []any{portNumber("UDP", 53), portNumber("TCP", 53)}},
		map[string]any{"name": "deny-everything-else", "action": "Deny",
			"to": []any{map[string]any{"networks": []any{"0.0.0.0/0", "::/0"}}, map[string]any{"namespaces": map[string]any{}}}},
	)
	return map[string]any{
		"priority": int64(clusterLockdownPriority),
		"subject":  lockedNamespaces(),
		"egress":   rules,
	}
}

func portNumber(protocol string, port int32) map[string]any {
	return map[string]any{"portNumber": map[string]any{"protocol": protocol, "port": int64(port)}}
}
