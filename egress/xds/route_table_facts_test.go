package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"testing"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// wholeTableSecrets are the secrets read from a route table's whole encoding, as they
// were before they were learnt host by host.
func wholeTableSecrets(t *testing.T, rc *routev3.RouteConfiguration) []string {
	t.Helper()
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(rc)
	if err != nil {
		t.Fatal(err)
	}
	refs := map[string]bool{}
	if err := collectInEncoded(b, rc.ProtoReflect().Descriptor(), refs); err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(maps.Keys(refs))
}

// onTheWire is what Envoy decodes from m as go-control-plane encodes it, and the
// SHA-256 of that encoding (the version go-control-plane sends).
func onTheWire[M proto.Message](t *testing.T, m M) (M, [sha256.Size]byte) {
	t.Helper()
	b, err := cachev3.MarshalResource(m)
	if err != nil {
		t.Fatal(err)
	}
	decoded := m.ProtoReflect().New().Interface().(M)
	if err := proto.Unmarshal(b, decoded); err != nil {
		t.Fatal(err)
	}
	return decoded, sha256.Sum256(b)
}

// TestTableFactsAreTheWholeTables learns the facts of every route table envoyconfig's
// golden IRs build, host by host, from nothing and again after one host is replaced
// (the others' facts taken from the first): the wire form go-control-plane is given
// must decode to the very table, the digest must be that of its encoding, and the
// secrets those read from the table's whole encoding.
func TestTableFactsAreTheWholeTables(t *testing.T) {
	tables, withSecrets := 0, 0
	builds := goldenBuilds(t)
	// No golden table references a secret (credentials are the clusters'); one that
	// does, in its own per-filter configuration and in a host's.
	builds["secrets"] = envoyconfig.Resources{Routes: []*routev3.RouteConfiguration{tableWithSecrets(t)}}
	for name, out := range builds {
		for _, rc := range out.Routes {
			tables++
			first := checkTableFacts(t, name, rc, nil)
			if len(first.secrets) > 0 {
				withSecrets++
			}
			if len(rc.GetVirtualHosts()) == 0 {
				continue
			}
			edited := withHostRenamed(rc, len(rc.GetVirtualHosts())/2)
			second := checkTableFacts(t, name+" (one host replaced)", edited, first)
			for i, vh := range edited.GetVirtualHosts() {
				if reused := second.hosts[vh] == first.hosts[vh]; reused != (vh == rc.GetVirtualHosts()[i]) {
					t.Errorf("%s: host %q: facts reused %v, want them reused only for the very same message", name, vh.GetName(), reused)
				}
			}
		}
	}
	if tables < 10 || withSecrets == 0 {
		t.Fatalf("%d tables, %d referencing secrets: the comparison proves little", tables, withSecrets)
	}
}

// tableWithSecrets is a table referencing the secret "head" in its own per-filter
// configuration and "host" in its second virtual host's.
func tableWithSecrets(t *testing.T) *routev3.RouteConfiguration {
	sds := func(name string) *anypb.Any {
		return mustAny(t, &tlsv3.UpstreamTlsContext{CommonTlsContext: &tlsv3.CommonTlsContext{
			TlsCertificateSdsSecretConfigs: []*tlsv3.SdsSecretConfig{{Name: name, SdsConfig: adsSource()}}}})
	}
	return &routev3.RouteConfiguration{
		Name:                 "with-secrets",
		TypedPerFilterConfig: map[string]*anypb.Any{"f": sds("head")},
		VirtualHosts: []*routev3.VirtualHost{
			{Name: "a", Domains: []string{"a.example.com"}},
			{Name: "b", Domains: []string{"b.example.com"}, TypedPerFilterConfig: map[string]*anypb.Any{"f": sds("host")}},
			{Name: "c", Domains: []string{"c.example.com"}},
		},
		IgnorePortInHostMatching: true,
	}
}

// checkTableFacts learns rc's facts and compares them with its whole encoding's.
func checkTableFacts(t *testing.T, what string, rc *routev3.RouteConfiguration, prev *facts) *facts {
	t.Helper()
	f, err := tableFacts(rc, prev)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	decoded, digest := onTheWire(t, f.wire)
	if !proto.Equal(decoded, rc) {
		t.Errorf("%s: table %q: the wire form decodes to another table", what, rc.GetName())
	}
	if f.digest != digest || f.version != hex.EncodeToString(digest[:]) {
		t.Errorf("%s: table %q: digest or version differs from the SHA-256 of the wire form's encoding", what, rc.GetName())
	}
	if secrets := wholeTableSecrets(t, rc); !slices.Equal(f.secrets, secrets) {
		t.Errorf("%s: table %q: secrets %v, the encoding references %v", what, rc.GetName(), f.secrets, secrets)
	}
	return f
}

// withHostRenamed is rc with host i replaced by a renamed copy; every other host is
// rc's very message, as the build hands them over.
func withHostRenamed(rc *routev3.RouteConfiguration, i int) *routev3.RouteConfiguration {
	out := tableHead(rc)
	out.VirtualHosts = slices.Clone(rc.GetVirtualHosts())
	vh := proto.Clone(out.VirtualHosts[i]).(*routev3.VirtualHost)
	vh.Name += "-renamed"
	out.VirtualHosts[i] = vh
	return out
}

// TestInvalidTablesFailAsWhole: a table whose own fields or one of whose hosts break the
// proto constraints is refused with the error validating it whole gives, also when the
// other hosts' facts are known.
func TestInvalidTablesFailAsWhole(t *testing.T) {
	valid := &routev3.RouteConfiguration{Name: "t", VirtualHosts: []*routev3.VirtualHost{
		{Name: "a", Domains: []string{"a.example.com"}},
		{Name: "b", Domains: []string{"b.example.com"}},
	}}
	known, err := tableFacts(valid, nil)
	if err != nil {
		t.Fatal(err)
	}
	noDomains := tableHead(valid)
	noDomains.VirtualHosts = []*routev3.VirtualHost{valid.VirtualHosts[0], {Name: "c"}} // domains: min_items 1
	badHeader := tableHead(valid)
	badHeader.VirtualHosts = valid.VirtualHosts
	badHeader.RequestHeadersToRemove = []string{"bad\nheader"}
	for _, rc := range []*routev3.RouteConfiguration{noDomains, badHeader} {
		for _, prev := range []*facts{nil, known} {
			_, err := tableFacts(rc, prev)
			want := validate(rc)
			if want == nil {
				t.Fatal("the fixture is valid")
			}
			if err == nil || err.Error() != want.Error() || !errors.Is(err, ErrInvalidResource) {
				t.Errorf("error %v, want %v (ErrInvalidResource)", err, want)
			}
		}
	}
}
