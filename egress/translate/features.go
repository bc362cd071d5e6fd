package translate

import (
	"sort"

	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/pkg/features"
)

// supportedFeatures are the Gateway API features Portcullis implements and proves with
// golden files and the real Envoy. Add one only with a test that shows it working.
var supportedFeatures = []features.FeatureName{
	features.SupportGateway,
	features.SupportGatewayInfrastructure,
	features.SupportGatewayBackendClientCertificate,
	features.SupportHTTPRoute,
	features.SupportReferenceGrant,
	features.SupportBackendTLSPolicy,
	features.SupportHTTPRouteMethodMatching,
	features.SupportHTTPRouteQueryParamMatching,
	features.SupportHTTPRouteResponseHeaderModification,
	features.SupportHTTPRouteBackendRequestHeaderModification,
	features.SupportHTTPRouteHostRewrite,
	features.SupportHTTPRoutePathRewrite,
	features.SupportHTTPRoutePathRedirect,
	features.SupportHTTPRouteSchemeRedirect,
	features.SupportHTTPRoutePortRedirect,
	features.SupportHTTPRouteRequestTimeout,
	features.SupportHTTPRouteBackendTimeout,
	// Proven by the Gateway API conformance suite on the single-node cluster
	// (conformance/report.yaml), besides goldens and the data-path tests.
	features.SupportGatewayPort8080,
	features.SupportHTTPRouteParentRefPort,
	features.SupportHTTPRouteDestinationPortMatching,
	features.SupportHTTPRouteNamedRouteRule,
	features.SupportHTTPRoute303RedirectStatusCode,
	features.SupportHTTPRoute307RedirectStatusCode,
	features.SupportHTTPRoute308RedirectStatusCode,
	features.SupportHTTPRouteBackendProtocolH2C,
	features.SupportHTTPRouteBackendProtocolWebSocket,
	features.SupportBackendTLSPolicySANValidation,
	features.SupportHTTPRouteRequestMirror,
	features.SupportHTTPRouteRequestMultipleMirrors,
	features.SupportHTTPRouteRequestPercentageMirror,
	// TLSRoute (passthrough) and TCPRoute: the GATEWAY-TLS and GATEWAY-TCP profiles.
	features.SupportTLSRoute,
	features.SupportTCPRoute,
	// HTTPRouteRetry is implemented (rules[].retry, TestRetryDataPath) but not claimed:
	// rules[].retry is in Gateway API v1.6.3's experimental channel only, and the
	// standard-channel CRDs we install drop the field.
}

// supportedFeatureList is the sorted list for GatewayClass status.
func supportedFeatureList() []gwapiv1.SupportedFeature {
	out := make([]gwapiv1.SupportedFeature, len(supportedFeatures))
	for i, f := range supportedFeatures {
		out[i] = gwapiv1.SupportedFeature{Name: gwapiv1.FeatureName(f)}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
