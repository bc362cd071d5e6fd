package envoyconfig

import (
	accesslogv3 "github.com/envoyproxy/go-control-plane/envoy/config/accesslog/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// invalidShareBody is what a request sent to the share of an invalid backendRef reads
// (Envoy answers it itself: InvalidBackendCluster does not exist). The route's
// ResolvedRefs condition says which ref and why; the body only says it is not the
// upstream's answer.
const invalidShareBody = ir.BackendUnavailable + ": invalid backendRef\n"

// invalidShareReply gives the 500 of InvalidBackendCluster a one-line body instead of
// none. It matches Envoy's "no cluster found" flag with status 500 only: other routes
// keep Envoy's 503 for a cluster that is not there yet. It is the same on every
// listener, so a route gaining or losing an invalid share never changes a listener.
func invalidShareReply() *hcmv3.LocalReplyConfig {
	status := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_StatusCodeFilter{StatusCodeFilter: &accesslogv3.StatusCodeFilter{
		Comparison: &accesslogv3.ComparisonFilter{Op: accesslogv3.ComparisonFilter_EQ, Value: &corev3.RuntimeUInt32{DefaultValue: 500, RuntimeKey: "portcullis.invalid_backend_status"}},
	}}}
	noCluster := &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_ResponseFlagFilter{ResponseFlagFilter: &accesslogv3.ResponseFlagFilter{Flags: []string{"NC"}}}}
	return &hcmv3.LocalReplyConfig{Mappers: []*hcmv3.ResponseMapper{{
		Filter: &accesslogv3.AccessLogFilter{FilterSpecifier: &accesslogv3.AccessLogFilter_AndFilter{AndFilter: &accesslogv3.AndFilter{
			Filters: []*accesslogv3.AccessLogFilter{status, noCluster},
		}}},
		StatusCode: wrapperspb.UInt32(500),
		Body:       &corev3.DataSource{Specifier: &corev3.DataSource_InlineString{InlineString: invalidShareBody}},
	}}}
}
