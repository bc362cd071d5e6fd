package envoyconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/golden"
)

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
			golden.Compare(t, filepath.Join("testdata", tc.name+".out.yaml"), got)
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

// toJSONValue renders one message as plain values, failing the test on error.
func toJSONValue(t *testing.T, m proto.Message) any {
	t.Helper()
	v, err := JSONValue(m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// renderResources is the golden form of the resources (secrets included: golden inputs
// hold placeholder bytes, never real keys).
func renderResources(t *testing.T, r Resources) []byte {
	t.Helper()
	y, err := RenderYAML(r, false)
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
