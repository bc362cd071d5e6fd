package envoyconfig

import accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"

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
	return jsonStdoutLog(a.fields(gateway, listener))
}
