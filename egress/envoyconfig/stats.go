package envoyconfig

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// MetadataNamespace is the cluster filter_metadata key under which each cluster names
// its origin: {"backend": "<ns>/<name>", "kind": "Backend"|"Service", "port": <n>,
// "sni": <server name sent, when TLS>}. The audit log reads it as
// %CLUSTER_METADATA(portcullis:backend)%; routes carry their own entries under it.
const MetadataNamespace = "portcullis"

// statName is the cluster's alt_stat_name: its name with every "." replaced by "_".
// Envoy splits stat names on dots and its default tag extractor takes the cluster name
// up to the first dot, so a Backend named api.example.com would leave the Prometheus
// label envoy_cluster_name cut at "backend/<ns>/api" and the rest glued to the metric
// name. Kubernetes names (namespaces, Backends, Services, port names) never contain
// "_", so the replacement is reversible: "_" in envoy_cluster_name is always a ".".
func statName(clusterName string) string {
	return strings.ReplaceAll(clusterName, ".", "_")
}

// originMetadata names the Backend or Service behind a cluster, and the SNI it sends;
// nil when the IR names no origin.
func originMetadata(c *ir.Cluster) *corev3.Metadata {
	o := c.Origin
	if o.Kind == "" {
		return nil
	}
	fields := &structpb.Struct{Fields: map[string]*structpb.Value{
		metaBackend: structpb.NewStringValue(o.Namespace + "/" + o.Name),
		"kind":      structpb.NewStringValue(o.Kind),
		"port":      structpb.NewNumberValue(float64(o.Port)),
	}}
	if c.TLS != nil && c.TLS.SNI != "" {
		fields.Fields[metaSNI] = structpb.NewStringValue(c.TLS.SNI)
	}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{MetadataNamespace: fields}}
}
