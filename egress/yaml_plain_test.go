package egress

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestPlainYAMLIsTheLibrarys: for every document of the repository's YAML files and
// thousands of random block documents made of tricky scalars and layouts, the plain
// converter either declines or gives byte for byte the library's JSON; and it does not
// decline the plain documents `portcullis translate` is mostly fed.
func TestPlainYAMLIsTheLibrarys(t *testing.T) {
	var docs [][]byte
	for _, pattern := range []string{"../samples/*.yaml", "../examples/*/*.yaml", "../config/*/*.yaml", "../api/v1alpha1/testdata/*.yaml", "../internal/crdvalidate/testdata/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			split, _ := readDocuments(bytes.NewReader(raw))
			docs = append(docs, split...)
		}
	}
	if len(docs) < 50 {
		t.Fatalf("only %d documents found", len(docs))
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		docs = append(docs, []byte(randomBlockYAML(r)))
	}
	converted := 0
	for _, doc := range docs {
		got, ok := plainYAMLToJSON(doc)
		if !ok {
			continue
		}
		converted++
		want, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Errorf("converted what the library refuses (%v):\n%s", err, doc)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("document:\n%s\ngot  %s\nwant %s", doc, got, want)
		}
	}
	if converted < 2000 {
		t.Fatalf("only %d of %d documents converted without the library", converted, len(docs))
	}
	t.Logf("%d of %d documents converted without the library", converted, len(docs))
	plain := "apiVersion: egress.portcullis.io/v1alpha1\nkind: Backend\nmetadata:\n  name: b0\n  namespace: team-0\nspec:\n  destination:\n    type: FQDN\n    fqdn:\n      hostname: api-0.example.com\n    ports:\n    - name: https\n      port: 443\n      protocol: HTTPS\n"
	if _, ok := plainYAMLToJSON([]byte(plain)); !ok {
		t.Errorf("declined a plain Backend:\n%s", plain)
	}
}

// yamlScalars are values and keys for random documents: plain strings and numbers, and
// what the library reads otherwise or the converter must decline.
var yamlScalars = []string{
	"a", "api-1.example.com", "B_2", "x/y", "443", "0", "012", "1e3", "0x1F", "1_000", "1.5", "-1", "+1", "18446744073709551616",
	"true", "True", "yes", "no", "on", "Off", "y", "N", "null", "Null", "~", "", "'q'", `"d"`, "a b", "a: b", "a #c", "#c",
	"[1]", "{a: 1}", "&x", "*x", "!t", "|", ">", "@a", "`a", "2026-11-27", "12:30", ".inf", ".nan", "<<", "a\tb", "-", "- a",
}

func randomScalar(r *rand.Rand) string {
	if r.IntN(3) > 0 {
		return yamlScalars[r.IntN(5)] // mostly plain
	}
	return yamlScalars[r.IntN(len(yamlScalars))]
}

// randomBlockYAML is a block mapping of random depth, keys and scalars, sometimes with
// a comment, a blank line, a key repeated or indentation that is off.
func randomBlockYAML(r *rand.Rand) string {
	var b strings.Builder
	var mapping func(indent int, depth int, first bool)
	var sequence func(indent int, depth int)
	value := func(indent, depth int) {
		switch k := r.IntN(10); {
		case depth > 3 || k < 6:
			fmt.Fprintf(&b, " %s\n", randomScalar(r))
		case k < 8:
			b.WriteString("\n")
			mapping(indent+2, depth+1, false)
		default:
			b.WriteString("\n")
			sequence(indent+r.IntN(2)*2, depth+1)
		}
	}
	mapping = func(indent, depth int, first bool) {
		for i := range 1 + r.IntN(4) {
			if !(first && i == 0) {
				b.WriteString(strings.Repeat(" ", indent+map[bool]int{true: 1}[r.IntN(200) == 0]))
			}
			key := yamlScalars[r.IntN(4)] + fmt.Sprint(r.IntN(3))
			if r.IntN(50) == 0 {
				key = randomScalar(r)
			}
			fmt.Fprintf(&b, "%s:", key)
			value(indent, depth)
			if r.IntN(100) == 0 {
				b.WriteString(strings.Repeat(" ", indent) + "# a comment\n")
			}
		}
	}
	sequence = func(indent, depth int) {
		for range 1 + r.IntN(3) {
			b.WriteString(strings.Repeat(" ", indent) + "- ")
			if depth < 3 && r.IntN(2) == 0 {
				mapping(indent+2, depth+1, true)
			} else {
				fmt.Fprintf(&b, "%s\n", randomScalar(r))
			}
		}
	}
	mapping(0, 0, false)
	return b.String()
}
