package samples

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Prefixes of the machine-readable header lines (after "# ").
const (
	expectPrefix   = "expect:"
	requiresPrefix = "requires:"
)

// sample is one file of samples/: its header, split into the prose a reader follows and
// the lines the test acts on, and its objects.
type sample struct {
	path        string
	name        string   // base name, e.g. 01-fqdn-system-ca.yaml
	description []string // the human-readable header lines, blank ones dropped
	headerText  string   // the whole header without the "# " prefixes
	requires    []requirement
	expects     []expectation
	objects     []*unstructured.Unstructured
}

// loadSamples reads every top-level *.yaml of dir, sorted by name (the order a user
// applies them in: 00-gateway.yaml first).
func loadSamples(t *testing.T, dir string) []*sample {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(paths)
	if len(paths) == 0 {
		t.Fatalf("no samples in %s", dir)
	}
	out := make([]*sample, 0, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		s, err := parseSample(filepath.Base(p), data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		s.path = p
		out = append(out, s)
	}
	return out
}

// parseSample splits a sample into its header and objects. The header is the block of
// comment lines at the top of the file; a malformed machine-readable line is an error
// naming the line.
func parseSample(name string, data []byte) (*sample, error) {
	s := &sample{name: name}
	var header []string
	for _, line := range strings.Split(string(data), "\n") {
		if !strings.HasPrefix(line, "#") {
			break
		}
		header = append(header, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
	}
	s.headerText = strings.Join(header, "\n")
	var errs []error
	for i, line := range header {
		switch {
		case strings.HasPrefix(line, expectPrefix):
			e, err := parseExpectation(strings.TrimSpace(strings.TrimPrefix(line, expectPrefix)))
			if err != nil {
				errs = append(errs, fmt.Errorf("header line %d: %w", i+1, err))
				continue
			}
			s.expects = append(s.expects, e)
		case strings.HasPrefix(line, requiresPrefix):
			r, err := parseRequirement(strings.TrimSpace(strings.TrimPrefix(line, requiresPrefix)))
			if err != nil {
				errs = append(errs, fmt.Errorf("header line %d: %w", i+1, err))
				continue
			}
			s.requires = append(s.requires, r)
		case strings.TrimSpace(line) != "":
			s.description = append(s.description, line)
		}
	}
	objs, err := decodeObjects(data)
	if err != nil {
		errs = append(errs, err)
	}
	s.objects = objs
	return s, errors.Join(errs...)
}

// decodeObjects reads every YAML document of a multi-document file.
func decodeObjects(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("YAML document %d: %w", len(out)+1, err)
		}
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// waitCommands are the "kubectl wait ..." commands the header tells the user to run,
// as kubectl arguments.
func (s *sample) waitCommands() [][]string {
	var out [][]string
	for _, line := range s.description {
		if f := strings.Fields(line); len(f) > 2 && f[0] == "kubectl" && f[1] == "wait" {
			out = append(out, f[1:])
		}
	}
	return out
}

// objectsOf returns the sample's objects of a kind.
func (s *sample) objectsOf(kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range s.objects {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
