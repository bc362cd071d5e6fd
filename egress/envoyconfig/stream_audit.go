package envoyconfig

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	"google.golang.org/protobuf/types/known/structpb"
)

// streamAudit is what one stream chain's audit line says that Envoy cannot look up: the
// route, the caller's namespace (the chain was picked by it) and the decision. A stream
// line has the same shape as a request's, without what a connection does not have (a
// response code) and with the server name the client asked for as "sni". Pod and
// ServiceAccount are not looked up on streams: the lookup lives in route tables, which a
// stream listener has none of, and putting it into the listener would drain every open
// connection whenever a pod starts. The caller's address is there to find the pod.
type streamAudit struct {
	route, namespace, decision string
}

func (a streamAudit) fields(gateway, listener string) map[string]any {
	caller := map[string]any{"address": "%DOWNSTREAM_REMOTE_ADDRESS_WITHOUT_PORT%"}
	if a.namespace != "" {
		caller["namespace"] = a.namespace
	}
	out := map[string]any{
		"log":            auditLogVersion,
		"time":           "%START_TIME(%Y-%m-%dT%H:%M:%E3SZ)%",
		"gateway":        gateway,
		"listener":       listener,
		"caller":         caller,
		"backend":        "%CLUSTER_METADATA(" + MetadataNamespace + ":" + metaBackend + ")%",
		"upstream":       "%UPSTREAM_HOST%",
		"sni":            "%REQUESTED_SERVER_NAME%",
		"decision":       a.decision,
		"responseFlags":  "%RESPONSE_FLAGS%",
		"bytesReceived":  "%BYTES_RECEIVED%",
		"bytesSent":      "%BYTES_SENT%",
		"durationMillis": "%DURATION%",
	}
	if a.route != "" {
		out["route"] = a.route
	}
	return out
}

// accessLog is the stream chain's audit log, written when the connection closes.
func (a streamAudit) accessLog(gateway, listener string) (*accesslogv3.AccessLog, error) {
	format, err := structpb.NewStruct(a.fields(gateway, listener))
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
