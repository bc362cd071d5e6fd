package envoyconfig

import (
	"encoding/json"
	"fmt"

	xdsmatcherv3 "github.com/cncf/xds/go/xds/type/matcher/v3"
	rbacconfigv3 "github.com/envoyproxy/go-control-plane/envoy/config/rbac/v3"
	streamv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/access_loggers/stream/v3"
	credentialinjectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	rbacv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/rbac/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	tlsinspectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/listener/tls_inspector/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	tcpproxyv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/tcp_proxy/v3"
	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	networkinputsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/matching/common_inputs/network/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"
)

// Resolver knows exactly the extension types Build packs into an Any, so rendered output
// never depends on what else is linked into a binary. A new type fails rendering until it
// is listed here.
var Resolver = func() *protoregistry.Types {
	types := new(protoregistry.Types)
	for _, m := range []proto.Message{
		&hcmv3.HttpConnectionManager{},
		&routerv3.Router{},
		&tlsv3.DownstreamTlsContext{},
		&tlsv3.UpstreamTlsContext{},
		&httpv3.HttpProtocolOptions{},
		&headermutationv3.HeaderMutation{},
		&credentialinjectorv3.CredentialInjector{},
		&genericv3.Generic{},
		&upstreamcodecv3.UpstreamCodec{},
		&rbacv3.RBAC{},
		&rbacv3.RBACPerRoute{},
		&rbacconfigv3.Action{},
		&streamv3.StdoutAccessLog{},
		&networkinputsv3.SourceIPInput{},
		&networkinputsv3.ServerNameInput{},
		&tcpproxyv3.TcpProxy{},
		&tlsinspectorv3.TlsInspector{},
		&xdsmatcherv3.IPMatcher{},
		&wrapperspb.StringValue{},
	} {
		if err := types.RegisterMessage(m.ProtoReflect().Type()); err != nil {
			panic(err)
		}
	}
	return types
}()

// JSONValue renders one message as protojson with proto field names, decoded into plain
// Go values (protojson's own spacing is unstable, so callers re-encode).
func JSONValue(m proto.Message) (any, error) {
	b, err := protojson.MarshalOptions{Resolver: Resolver, UseProtoNames: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("protojson: %w", err)
	}
	var v any
	return v, json.Unmarshal(b, &v)
}

// RenderYAML prints resources grouped by type (listeners, routes, clusters, endpoints,
// secrets) as YAML with sorted keys. With redactSecrets, a secret shows only its name:
// what a user prints to a terminal must not carry key material.
func RenderYAML(r Resources, redactSecrets bool) ([]byte, error) {
	doc, err := Document(r, redactSecrets)
	if err != nil {
		return nil, err
	}
	j, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// Document is RenderYAML's content as plain values, for callers that embed it.
func Document(r Resources, redactSecrets bool) (map[string][]any, error) {
	secrets := asMessages(r.Secrets)
	if redactSecrets {
		secrets = nil
		for _, s := range r.Secrets {
			secrets = append(secrets, &tlsv3.Secret{Name: s.GetName()})
		}
	}
	groups := map[string][]proto.Message{
		"listeners": asMessages(r.Listeners),
		"routes":    asMessages(r.Routes),
		"clusters":  asMessages(r.Clusters),
		"endpoints": asMessages(r.Endpoints),
		"secrets":   secrets,
	}
	doc := map[string][]any{}
	for kind, msgs := range groups {
		for _, m := range msgs {
			v, err := JSONValue(m)
			if err != nil {
				return nil, err
			}
			doc[kind] = append(doc[kind], v)
		}
	}
	return doc, nil
}

func asMessages[T proto.Message](in []T) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}
