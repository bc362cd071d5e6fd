package envoyconfig

import (
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// MetadataNamespace is the cluster filter_metadata key under which each cluster names
// its origin: {"backend": "<ns>/<name>", "kind": "Backend"|"Service", "port": <n>}.
// An access log reads it as %CLUSTER_METADATA(portcullis:backend)%.
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

// originMetadata names the Backend or Service behind a cluster; nil when the IR names
// none.
func originMetadata(o ir.ClusterOrigin) *corev3.Metadata {
	if o.Kind == "" {
		return nil
	}
	fields := &structpb.Struct{Fields: map[string]*structpb.Value{
		"backend": structpb.NewStringValue(o.Namespace + "/" + o.Name),
		"kind":    structpb.NewStringValue(o.Kind),
		"port":    structpb.NewNumberValue(float64(o.Port)),
	}}
	return &corev3.Metadata{FilterMetadata: map[string]*structpb.Struct{MetadataNamespace: fields}}
}
