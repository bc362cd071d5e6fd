package envoyconfig

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// The audit log: one JSON line on Envoy's standard output per request, whatever the
// outcome. It names who called (address, namespace, pod, ServiceAccount), through what
// (Gateway, listener, route), to what (Backend, the address dialled, the SNI sent) and
// what happened (decision, response code and flags, bytes, duration). It never holds a
// header value, credential or body: the route, Backend and decision come from metadata
// Portcullis writes, not from the request.
const (
	stdoutAccessLog = "envoy.access_loggers.stdout"
	metaRoute       = "route"
	metaDecision    = "decision"
	metaBackend     = "backend"
	metaSNI         = "sni"
	auditLogVersion = "portcullis.audit.v1"
)

// The decisions the audit log records. "allowed" means a route of the caller (or one
// admitting it) answered; what the upstream said is in the response code and flags.
const (
	DecisionAllowed          = "allowed"
	DecisionNoRoute          = "denied: no route"
	DecisionNoRouteForCaller = "denied: no route for caller"
	DecisionUnknownCaller    = "denied: unknown caller"
)

// auditFields are the access log's JSON fields. Literal values are known per filter
// chain when the builder runs; the %…% ones Envoy fills per request. A chain of unknown
// callers says so instead of looking them up.
func auditFields(gateway, listener string, unknown bool) map[string]any {
	caller := map[string]any{
		"address":        "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%",
		"namespace":      identityField(nsIdentityPrefix),
		"pod":            identityField(podIdentityPrefix),
		"serviceAccount": identityField(saIdentityPrefix),
	}
	if unknown {
		caller["namespace"], caller["pod"], caller["serviceAccount"] = unknownCaller, unknownCaller, unknownCaller
	}
	return map[string]any{
		"log":            auditLogVersion,
		"time":           "%START_TIME(%Y-%m-%dT%H:%M:%E3SZ)%",
		"gateway":        gateway,
		"listener":       listener,
		"caller":         caller,
		"route":          "%METADATA(ROUTE:" + MetadataNamespace + ":" + metaRoute + ")%",
		"backend":        "%CLUSTER_METADATA(" + MetadataNamespace + ":" + metaBackend + ")%",
		"upstream":       "%UPSTREAM_HOST%",
		"sni":            "%CLUSTER_METADATA(" + MetadataNamespace + ":" + metaSNI + ")%",
		"decision":       "%METADATA(ROUTE:" + MetadataNamespace + ":" + metaDecision + ")%",
		"responseCode":   "%RESPONSE_CODE%",
		"responseFlags":  "%RESPONSE_FLAGS%",
		"bytesReceived":  "%BYTES_RECEIVED%",
		"bytesSent":      "%BYTES_SENT%",
		"durationMillis": "%DURATION%",
	}
}

func identityField(prefix string) string {
	return "%DYNAMIC_METADATA(" + rbacMetadataNamespace + ":" + identityKey(prefix) + ")%"
}

// auditLog is the access log of one filter chain's connection manager.
func auditLog(gateway, listener string, unknown bool) (*accesslogv3.AccessLog, error) {
	return jsonStdoutLog(auditFields(gateway, listener, unknown))
}

// jsonStdoutLog writes one JSON line of fields on Envoy's standard output per request
// (or, on a TCP proxy, per connection).
func jsonStdoutLog(fields map[string]any) (*accesslogv3.AccessLog, error) {
	format, err := structpb.NewStruct(fields)
	if err != nil {
		return nil, err
	}
	cfg, err := pack(&streamv3.StdoutAccessLog{AccessLogFormat: &streamv3.StdoutAccessLog_LogFormat{LogFormat: &corev3.SubstitutionFormatString{
		Format: &corev3.SubstitutionFormatString_JsonFormat{JsonFormat: format},
	}}})
	if err != nil {
		return nil, err
	}
	return &accesslogv3.AccessLog{Name: stdoutAccessLog, ConfigType: &accesslogv3.AccessLog_TypedConfig{TypedConfig: cfg}}, nil
}
