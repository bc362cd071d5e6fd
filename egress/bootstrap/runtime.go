package bootstrap

import (
	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	overloadv3 "github.com/envoyproxy/go-control-plane/envoy/config/overload/v3"
	downstreamconnectionsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/resource_monitors/downstream_connections/v3"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// MaxDownstreamConnections caps the connections one Envoy accepts on all its listeners
// together (the admin interface is exempt).
const MaxDownstreamConnections = 50000

// Runtime defaults. HTTPRoute regular expressions come from users who cannot predict
// RE2's program size, so the limit is raised from Envoy's default of 100 (a larger
// program still runs in linear time); above the warning level Envoy logs a warning. The
// translator refuses a regular expression above the error level on its route
// (ir.MaxRegexProgramSize), so Envoy never sees one.
const (
	regexProgramSizeErrorLevel = ir.MaxRegexProgramSize
	regexProgramSizeWarnLevel  = 200
)

// LayeredRuntime has a static layer with the defaults above and an admin layer, so that
// an operator can adjust a runtime key through the (local-only) admin interface. Every
// bootstrap of an Envoy serving translated configuration uses it, static ones included:
// the translator's checks assume its limits.
func LayeredRuntime() *bootstrapv3.LayeredRuntime {
	static := &structpb.Struct{Fields: map[string]*structpb.Value{
		"re2.max_program_size.error_level": structpb.NewNumberValue(regexProgramSizeErrorLevel),
		"re2.max_program_size.warn_level":  structpb.NewNumberValue(regexProgramSizeWarnLevel),
	}}
	return &bootstrapv3.LayeredRuntime{Layers: []*bootstrapv3.RuntimeLayer{
		{Name: "portcullis-defaults", LayerSpecifier: &bootstrapv3.RuntimeLayer_StaticLayer{StaticLayer: static}},
		{Name: "admin", LayerSpecifier: &bootstrapv3.RuntimeLayer_AdminLayer_{AdminLayer: &bootstrapv3.RuntimeLayer_AdminLayer{}}},
	}}
}

// overloadManager sets the global downstream connection limit (without it Envoy warns
// at start that there is none).
func overloadManager() (*overloadv3.OverloadManager, error) {
	limit, err := anypb.New(&downstreamconnectionsv3.DownstreamConnectionsConfig{
		MaxActiveDownstreamConnections: MaxDownstreamConnections,
	})
	if err != nil {
		return nil, err
	}
	return &overloadv3.OverloadManager{ResourceMonitors: []*overloadv3.ResourceMonitor{{
		Name:       "envoy.resource_monitors.global_downstream_max_connections",
		ConfigType: &overloadv3.ResourceMonitor_TypedConfig{TypedConfig: limit},
	}}}, nil
}
