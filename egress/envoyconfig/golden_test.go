package envoyconfig

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	credentialinjectorv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/credential_injector/v3"
	headermutationv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/header_mutation/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	upstreamcodecv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/upstream_codec/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	genericv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/http/injected_credentials/generic/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoregistry"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/ir"
)

var update = flag.Bool("update", false, "rewrite testdata/*.out.yaml from the current output")

// goldenCase is one testdata/<name>.in.yaml IR.
type goldenCase struct {
	name string
	gw   ir.Gateway
}

// goldenCases loads every IR input in testdata, sorted by name.
func goldenCases(t *testing.T) []goldenCase {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no testdata/*.in.yaml")
	}
	cases := make([]goldenCase, 0, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var gw ir.Gateway
		if err := yaml.UnmarshalStrict(raw, &gw); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		cases = append(cases, goldenCase{name: strings.TrimSuffix(filepath.Base(p), ".in.yaml"), gw: gw})
	}
	return cases
}

// testOptions point SystemCA at a fixed path so golden output does not depend on the host.
var testOptions = Options{SystemCAFile: "/etc/ssl/certs/ca-certificates.crt"}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			got := renderResources(t, res)
			path := filepath.Join("testdata", tc.name+".out.yaml")
			if *update {
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s differs from Build output (go test -update rewrites it); got:\n%s", path, got)
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			first, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			second, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			a, b := marshalAll(t, first), marshalAll(t, second)
			if !bytes.Equal(a, b) {
				t.Error("two Builds of the same IR marshal differently")
			}
		})
	}
}

// marshalAll is the deterministic wire form of every resource, in order.
func marshalAll(t *testing.T, r Resources) []byte {
	t.Helper()
	var out []byte
	for _, m := range allMessages(r) {
		b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b...)
	}
	return out
}

// allMessages lists every resource: listeners, routes, clusters, endpoints, secrets.
func allMessages(r Resources) []proto.Message {
	return append(nonSecretMessages(r), asMessages(r.Secrets)...)
}

// nonSecretMessages lists every resource except the secrets.
func nonSecretMessages(r Resources) []proto.Message {
	var out []proto.Message
	out = append(out, asMessages(r.Listeners)...)
	out = append(out, asMessages(r.Routes)...)
	out = append(out, asMessages(r.Clusters)...)
	out = append(out, asMessages(r.Endpoints)...)
	return out
}

func asMessages[T proto.Message](in []T) []proto.Message {
	out := make([]proto.Message, len(in))
	for i, m := range in {
		out[i] = m
	}
	return out
}

// goldenResolver knows exactly the extension types Build may pack into an Any. A new
// type fails rendering until it is listed here, so golden files never depend on what
// else happens to be linked into the test binary.
var goldenResolver = func() *protoregistry.Types {
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
	} {
		if err := types.RegisterMessage(m.ProtoReflect().Type()); err != nil {
			panic(err)
		}
	}
	return types
}()

// toJSONValue renders one message as protojson, decoded into plain Go values.
func toJSONValue(t *testing.T, m proto.Message) any {
	t.Helper()
	b, err := protojson.MarshalOptions{Resolver: goldenResolver, UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatalf("protojson: %v", err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// renderResources is the golden form: resources grouped by type, each as protojson with
// proto field names, as YAML with sorted keys (protojson's own spacing is unstable).
func renderResources(t *testing.T, r Resources) []byte {
	t.Helper()
	groups := map[string][]proto.Message{
		"listeners": asMessages(r.Listeners),
		"routes":    asMessages(r.Routes),
		"clusters":  asMessages(r.Clusters),
		"endpoints": asMessages(r.Endpoints),
		"secrets":   asMessages(r.Secrets),
	}
	doc := map[string][]any{}
	for kind, msgs := range groups {
		if len(msgs) == 0 {
			continue
		}
		for _, m := range msgs {
			doc[kind] = append(doc[kind], toJSONValue(t, m))
		}
	}
	j, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(j)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// goldenIR returns the IR of one testdata case.
func goldenIR(t *testing.T, name string) ir.Gateway {
	t.Helper()
	for _, tc := range goldenCases(t) {
		if tc.name == name {
			return tc.gw
		}
	}
	t.Fatalf("no golden case %q", name)
	return ir.Gateway{}
}
