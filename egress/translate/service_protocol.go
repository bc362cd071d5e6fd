package translate

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// serviceAppProtocols maps a Service port's appProtocol to what Envoy speaks to it
// (Gateway API GEP-1911). Plain HTTP and HTTPS (TLS comes from a BackendTLSPolicy) are
// HTTP/1.1; h2c is HTTP/2 with prior knowledge; ws and wss are HTTP/1.1 with the
// WebSocket upgrade allowed.
var serviceAppProtocols = map[string]ir.UpstreamProtocol{
	"":                  ir.ProtocolHTTP1,
	"http":              ir.ProtocolHTTP1,
	"https":             ir.ProtocolHTTP1,
	"kubernetes.io/h2c": ir.ProtocolHTTP2,
	"kubernetes.io/ws":  ir.ProtocolWebSocket,
	"kubernetes.io/wss": ir.ProtocolWebSocket,
}

// serviceProtocol is the upstream protocol of a Service port. An appProtocol Portcullis
// does not speak makes the reference invalid (ResolvedRefs=False/UnsupportedProtocol),
// as Gateway API requires, rather than being spoken to in HTTP/1.1.
func serviceProtocol(svc *corev1.Service, port int32) (ir.UpstreamProtocol, *refError) {
	for _, p := range svc.Spec.Ports {
		if p.Port != port || p.AppProtocol == nil {
			continue
		}
		name := *p.AppProtocol
		if !strings.Contains(name, "/") {
			name = strings.ToLower(name) // IANA names are case-insensitive
		}
		if proto, ok := serviceAppProtocols[name]; ok {
			return proto, nil
		}
		return "", newRefError(string(gwapiv1.RouteReasonUnsupportedProtocol),
			"Service %s/%s port %d: appProtocol %q is not supported; use http, https, kubernetes.io/h2c, kubernetes.io/ws or kubernetes.io/wss",
			svc.Namespace, svc.Name, port, *p.AppProtocol)
	}
	return ir.ProtocolHTTP1, nil
}
