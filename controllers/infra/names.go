package infra

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// Labels on every object the Kubernetes provider creates. The Envoy pods carry
// SelectorLabels; NetworkPolicies select them by these labels too.
const (
	LabelName             = "app.kubernetes.io/name"
	LabelNameValue        = "portcullis-envoy"
	LabelManagedBy        = "app.kubernetes.io/managed-by"
	LabelManagedByValue   = "portcullis"
	LabelGatewayName      = "gateway.portcullis.io/name"
	LabelGatewayNamespace = "gateway.portcullis.io/namespace"
)

// namePrefix starts the name of every object made for a Gateway.
const namePrefix = "portcullis-"

// maxLabel is the longest label value and the longest Service name.
const maxLabel = 63

// ResourceName is the name of the ServiceAccount, ConfigMap, Deployment and Service of
// a Gateway: "portcullis-<gateway>". A Gateway name that would not make a valid
// Service name (dots, or too long) is shortened and suffixed with a hash of the full
// name, so two Gateways never share a name.
func ResourceName(gateway string) string {
	name := namePrefix + gateway
	if len(name) <= maxLabel && !strings.Contains(gateway, ".") {
		return name
	}
	return shorten(strings.ReplaceAll(name, ".", "-"), gateway)
}

// LabelValue is the value of LabelGatewayName for a Gateway: its name, or a shortened
// name with a hash when it is longer than a label value may be.
func LabelValue(gateway string) string {
	if len(gateway) <= maxLabel {
		return gateway
	}
	return shorten(gateway, gateway)
}

// shorten cuts s to leave room for "-<8 hex digits of the hash of full>" within maxLabel.
func shorten(s, full string) string {
	sum := sha256.Sum256([]byte(full))
	suffix := hex.EncodeToString(sum[:4])
	if keep := maxLabel - len(suffix) - 1; len(s) > keep {
		s = s[:keep]
	}
	return strings.TrimRight(s, "-.") + "-" + suffix
}

// SelectorLabels select the Envoy pods of one Gateway.
func SelectorLabels(namespace, name string) map[string]string {
	return map[string]string{
		LabelName:             LabelNameValue,
		LabelGatewayName:      LabelValue(name),
		LabelGatewayNamespace: namespace,
	}
}

// Labels are put on every object of a Gateway.
func Labels(namespace, name string) map[string]string {
	l := SelectorLabels(namespace, name)
	l[LabelManagedBy] = LabelManagedByValue
	return l
}

// managedFor tells whether labels mark an object as made by Portcullis for the Gateway.
func managedFor(labels map[string]string, namespace, name string) bool {
	for k, v := range Labels(namespace, name) {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// ReadinessPort is where the Envoy pods' readiness listener answers ReadinessPath; the
// translator refuses Gateway listeners on it.
const ReadinessPort = bootstrap.PodReadinessPort

// ReadinessPath is the path the kubelet probes.
const ReadinessPath = bootstrap.ReadinessPath
