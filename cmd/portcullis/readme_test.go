package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// readme returns README.md of the repository.
func readme(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// flagLine matches a flag in Go's flag usage output: "  -name value".
var flagLine = regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)

// TestREADMEDocumentsEveryFlag: every flag of every subcommand is in the README's
// reference, so a new flag cannot ship undocumented.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	text := readme(t)
	invocations := map[string][]string{}
	for name := range commands {
		invocations[name] = []string{name, "-h"}
	}
	invocations["dnsguard"] = []string{"dnsguard", "resolve", "-h"}
	for name, args := range invocations {
		var out bytes.Buffer
		run(args, &out, &out)
		flags := flagLine.FindAllStringSubmatch(out.String(), -1)
		if name != "version" && len(flags) == 0 {
			t.Errorf("%v printed no flags:\n%s", args, out.String())
		}
		for _, f := range flags {
			if !strings.Contains(text, "`--"+f[1]+"`") && !strings.Contains(text, "`-"+f[1]+"`") {
				t.Errorf("README does not document `--%s` of portcullis %s", f[1], name)
			}
		}
	}
}

// TestREADMEDocumentsEveryExtensionKey: the README's extensions table has a row per
// extension type the translator supports, naming each config key the type knows.
func TestREADMEDocumentsEveryExtensionKey(t *testing.T) {
	rows := map[string]string{}
	for _, line := range strings.Split(readme(t), "\n") {
		if typ, _, ok := strings.Cut(strings.TrimPrefix(line, "| `"), "` |"); ok && strings.HasPrefix(line, "| `portcullis.io/") {
			rows[typ] = line
		}
	}
	for typ, keys := range translate.ExtensionKeys() {
		row, ok := rows[typ]
		if !ok {
			t.Errorf("README has no extensions table row for %s", typ)
			continue
		}
		for _, k := range keys {
			if !strings.Contains(row, "`"+k+"`") && !strings.Contains(row, "`"+k+":") {
				t.Errorf("README's row for %s does not name config key `%s`", typ, k)
			}
		}
	}
}

// TestREADMEDocumentsEveryReasonAndMetric: every Backend condition reason and every
// portcullis_* metric defined in the code appears in the README.
func TestREADMEDocumentsEveryReasonAndMetric(t *testing.T) {
	text := readme(t)
	root, _ := testenv.RepoRoot()
	for _, c := range stringConstants(t, filepath.Join(root, "api/v1alpha1/conditions.go"), "") {
		if !strings.Contains(text, "`"+c+"`") {
			t.Errorf("README does not document the Backend condition or reason `%s`", c)
		}
	}
	var metrics []string
	for _, file := range []string{"controllers/metrics.go", "dnsguard/metrics.go"} {
		metrics = append(metrics, stringConstants(t, filepath.Join(root, file), "portcullis_")...)
	}
	if len(metrics) < 8 {
		t.Fatalf("found %d metric names in the code: %v", len(metrics), metrics)
	}
	for _, m := range metrics {
		if !strings.Contains(text, "`"+m) {
			t.Errorf("README does not document the metric `%s`", m)
		}
	}
}

// stringConstants returns the string literals of a Go file that are constant values or
// metric names (string literals starting with prefix when prefix is set).
func stringConstants(t *testing.T, path, prefix string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && strings.HasPrefix(s, prefix) && s != "" {
			out = append(out, s)
		}
		return true
	})
	return out
}
