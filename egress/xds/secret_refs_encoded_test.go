package xds

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
)

// decodedSecretRefs is the reference the encoded reading is checked against: every
// message visited decoded, every Any unmarshalled whole, every SdsSecretConfig fetched
// over ADS counted.
func decodedSecretRefs(t *testing.T, m protoreflect.Message, names map[string]bool) {
	t.Helper()
	if sds, ok := m.Interface().(*tlsv3.SdsSecretConfig); ok {
		if sds.GetSdsConfig().GetAds() != nil {
			names[sds.GetName()] = true
		}
		return
	}
	if a, ok := m.Interface().(*anypb.Any); ok {
		inner, err := a.UnmarshalNew()
		if err != nil {
			return // a type this binary does not know
		}
		decodedSecretRefs(t, inner.ProtoReflect(), names)
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.IsMap():
			if fd.MapValue().Message() != nil {
				v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
					decodedSecretRefs(t, e.Message(), names)
					return true
				})
			}
		case fd.Message() == nil:
		case fd.IsList():
			for i := range v.List().Len() {
				decodedSecretRefs(t, v.List().Get(i).Message(), names)
			}
		default:
			decodedSecretRefs(t, v.Message(), names)
		}
		return true
	})
}

// collectEncoded reads m's secret references as factsOf does: from its deterministic
// encoding.
func collectEncoded(t *testing.T, m proto.Message, names map[string]bool) error {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return collectInEncoded(b, m.ProtoReflect().Descriptor(), names)
}

// TestSecretReferencesReadEncodedAreThoseDecoded builds every IR of envoyconfig's golden
// tests (TLS origination, client certificates, tenant tables and their caller matchers,
// stream routes, the forward proxy) and checks that reading each resource encoded finds
// the secret references decoding it whole finds.
func TestSecretReferencesReadEncodedAreThoseDecoded(t *testing.T) {
	referencing := 0
	for name, out := range goldenBuilds(t) {
		t.Run(name, func(t *testing.T) {
			var msgs []proto.Message
			for _, l := range out.Listeners {
				msgs = append(msgs, l)
			}
			for _, c := range out.Clusters {
				msgs = append(msgs, c)
			}
			for _, r := range out.Routes {
				msgs = append(msgs, r)
			}
			for _, m := range msgs {
				got, want := map[string]bool{}, map[string]bool{}
				if err := collectEncoded(t, m, got); err != nil {
					t.Fatal(err)
				}
				decodedSecretRefs(t, m.ProtoReflect(), want)
				if !maps.Equal(got, want) {
					t.Errorf("%T: read encoded %v, decoded %v", m, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
				}
				if len(want) > 0 {
					referencing++
				}
			}
		})
	}
	if referencing == 0 {
		t.Error("no golden resource references a secret: the comparison proved nothing")
	}
}

// goldenBuilds builds every IR of envoyconfig's golden tests (TLS origination, client
// certificates, tenant tables and their caller matchers, stream routes, the forward
// proxy), by golden name.
func goldenBuilds(t *testing.T) map[string]envoyconfig.Resources {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "envoyconfig", "testdata", "*.in.yaml"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no envoyconfig golden inputs: %v", err)
	}
	builds := make(map[string]envoyconfig.Resources, len(paths))
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var gw ir.Gateway
		if err := yaml.UnmarshalStrict(raw, &gw); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		out, err := envoyconfig.Build(gw, envoyconfig.Options{SystemCAFile: "/etc/ssl/certs/ca-certificates.crt"})
		if err != nil {
			t.Fatalf("%s: Build: %v", p, err)
		}
		builds[strings.TrimSuffix(filepath.Base(p), ".in.yaml")] = out
	}
	return builds
}

// TestSecretReferencesInNestedAnys covers what the builder's output may not: an Any
// inside an Any, a secret fetched another way than ADS, a type this binary does not know,
// and a broken encoding.
func TestSecretReferencesInNestedAnys(t *testing.T) {
	sds := func(name string, source *corev3.ConfigSource) *tlsv3.UpstreamTlsContext {
		return &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: name, SdsConfig: source}}}}
	}
	pathSource := &corev3.ConfigSource{ConfigSourceSpecifier: &corev3.ConfigSource_PathConfigSource{PathConfigSource: &corev3.PathConfigSource{Path: "/x"}}}
	inner := mustAny(t, sds("deep", adsSource()))
	outer := mustAny(t, &corev3.TypedExtensionConfig{Name: "wrapper", TypedConfig: inner})
	broken := mustAny(t, sds("cut", adsSource()))
	broken.Value = broken.Value[:len(broken.Value)-3]
	if _, err := protoregistry.GlobalTypes.FindMessageByURL("type.googleapis.com/example.Unknown"); err == nil {
		t.Fatal("example.Unknown is a known type")
	}
	tests := []struct {
		name    string
		a       *anypb.Any
		want    []string
		wantErr bool
	}{
		{name: "an Any in an Any", a: outer, want: []string{"deep"}},
		{name: "a secret from a file is not one the snapshot serves", a: mustAny(t, sds("file", pathSource))},
		{name: "a type this binary does not know", a: &anypb.Any{TypeUrl: "type.googleapis.com/example.Unknown", Value: []byte{0x0a, 0x01, 'x'}}},
		{name: "a type that cannot reference one is not read", a: mustAny(t, wrapperspb.String("not a secret"))},
		{name: "a broken encoding is an error", a: broken, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := map[string]bool{}
			err := collectEncoded(t, tt.a, got)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want one: %v", err, tt.wantErr)
			}
			if names := slices.Sorted(maps.Keys(got)); !tt.wantErr && !slices.Equal(names, tt.want) {
				t.Errorf("names %v, want %v", names, tt.want)
			}
		})
	}
}
