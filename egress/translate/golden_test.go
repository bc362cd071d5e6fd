package translate

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/internal/golden"
)

// testInput is a test-only document in a golden input: the DNS guard's answers and the
// ranges the test address policy refuses.
type testInput struct {
	Kind        string           `json:"kind"`
	Addresses   egress.Addresses `json:"addresses"`
	DeniedCIDRs []string         `json:"deniedCIDRs"`
	// ClusterCIDRs become Options.ClusterCIDRs (the DNS guard's --cluster-cidr).
	ClusterCIDRs []string `json:"clusterCIDRs"`
	// Now is the translation time (default: 2027-01-01, inside the test certificates' life).
	Now time.Time `json:"now"`
	// Unrestricted are the unrestricted caller ranges (local mode's host).
	Unrestricted []string `json:"unrestricted"`
	// OwnPorts and OwnAddresses become the Options of the same names.
	OwnPorts     map[uint32]string `json:"ownPorts"`
	OwnAddresses []netip.Addr      `json:"ownAddresses"`
}

// prefixPolicy refuses addresses inside any of its prefixes.
type prefixPolicy []netip.Prefix

func (p prefixPolicy) CheckAddr(a netip.Addr) (bool, string) {
	for _, pre := range p {
		if pre.Contains(a.Unmap()) {
			return false, "denied (" + pre.String() + ")"
		}
	}
	return true, ""
}

// TestGolden translates every testdata/<case>.in.yaml and compares the IR and statuses
// with <case>.out.yaml (and checks that translating left the input as it was). Run with
// -update to accept a change, then review the diff.
func TestGolden(t *testing.T) {
	for _, in := range goldenInputs(t) {
		name := strings.TrimSuffix(filepath.Base(in), ".in.yaml")
		t.Run(name, func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, in)
			before := res.DeepCopy()
			got := renderResult(t, Translate(res, addrs, opts))
			if !equality.Semantic.DeepEqual(before, res) {
				t.Fatal("translation modified its input: the manager hands it the informer cache's objects, uncopied")
			}
			again := renderResult(t, Translate(res.DeepCopy(), addrs, opts))
			if !bytes.Equal(got, again) {
				t.Fatal("translation is not deterministic: two runs over the same input differ")
			}
			golden.Compare(t, strings.TrimSuffix(in, ".in.yaml")+".out.yaml", got)
		})
	}
}

// goldenInputs lists testdata/*.in.yaml.
func goldenInputs(t *testing.T) []string {
	t.Helper()
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.in.yaml"))
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no golden inputs found: %v", err)
	}
	return inputs
}

// loadGoldenInput expands the input's template functions (pem, b64) and splits it into
// Kubernetes objects and the test-only TestInput document.
func loadGoldenInput(t *testing.T, path string) (*egress.Resources, egress.Addresses, Options) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := template.New(path).Funcs(template.FuncMap{"pem": pemFile(t), "b64": b64File(t)}).Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	var expanded bytes.Buffer
	if err := tmpl.Execute(&expanded, nil); err != nil {
		t.Fatal(err)
	}
	res := &egress.Resources{}
	var ti testInput
	reader := utilyaml.NewYAMLReader(bufio.NewReader(&expanded))
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		var kind struct{ Kind string }
		_ = yaml.Unmarshal(doc, &kind)
		if kind.Kind == "TestInput" {
			if err := yaml.UnmarshalStrict(doc, &ti); err != nil {
				t.Fatalf("TestInput: %v", err)
			}
			continue
		}
		if err := res.Load(bytes.NewReader(doc)); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	var policy prefixPolicy
	for _, c := range ti.DeniedCIDRs {
		policy = append(policy, netip.MustParsePrefix(c))
	}
	now := ti.Now
	if now.IsZero() {
		now = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	var unrestricted, cluster []netip.Prefix
	for _, u := range ti.Unrestricted {
		unrestricted = append(unrestricted, netip.MustParsePrefix(u))
	}
	for _, c := range ti.ClusterCIDRs {
		cluster = append(cluster, netip.MustParsePrefix(c))
	}
	return res, ti.Addresses, Options{AddressPolicy: policy, ClusterCIDRs: cluster, Now: now, Unrestricted: unrestricted,
		OwnPorts: ti.OwnPorts, OwnAddresses: ti.OwnAddresses}
}

func pemFile(t *testing.T) func(string) string {
	return func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		q, _ := json.Marshal(string(b))
		return string(q)
	}
}

func b64File(t *testing.T) func(string) string {
	return func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		return base64.StdEncoding.EncodeToString(b)
	}
}

// renderResult prints the result as YAML with every secret's data replaced by a short
// hash: goldens stay readable and never hold key material.
func renderResult(t *testing.T, r Result) []byte {
	t.Helper()
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var generic map[string]any
	if err := json.Unmarshal(js, &generic); err != nil {
		t.Fatal(err)
	}
	gateways, _ := generic["gateways"].([]any)
	for _, gw := range gateways {
		secrets, _ := gw.(map[string]any)["secrets"].([]any)
		for _, s := range secrets {
			redact(s.(map[string]any))
		}
	}
	out, err := yaml.Marshal(generic)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func redact(secret map[string]any) {
	for _, field := range []string{"certificate", "privateKey", "value"} {
		if v, ok := secret[field].(string); ok {
			data, _ := base64.StdEncoding.DecodeString(v)
			secret[field] = fmt.Sprintf("sha256:%x", sha256.Sum256(data))[:19]
		}
	}
}
