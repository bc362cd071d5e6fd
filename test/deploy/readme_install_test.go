package deploy

import (
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestInstallSectionShowsTheSampleGateway: the README's install section shows the
// GatewayClass and Gateway of samples/00-gateway.yaml, object for object, and its
// commands use that Gateway's namespace, so the install docs and the samples agree.
func TestInstallSectionShowsTheSampleGateway(t *testing.T) {
	section := readmeSection(t, "## Install on a cluster")
	var shown []map[string]any
	for _, block := range fencedBlocks(section, "yaml") {
		objs, err := decodeObjects([]byte(block))
		if err != nil {
			t.Fatalf("a yaml block of the install section does not parse: %v\n%s", err, block)
		}
		for _, o := range objs {
			if o.GetAPIVersion() == "gateway.networking.k8s.io/v1" {
				shown = append(shown, o.Object)
			}
		}
	}
	sample, err := os.ReadFile(repoPath(t, "samples", "00-gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(sample)
	if err != nil {
		t.Fatal(err)
	}
	var want []map[string]any
	namespace := ""
	for _, o := range objs {
		if o.GetAPIVersion() == "gateway.networking.k8s.io/v1" {
			want = append(want, o.Object)
		}
		if o.GetKind() == "Gateway" {
			namespace = o.GetNamespace()
		}
	}
	if len(want) != 2 || !reflect.DeepEqual(shown, want) {
		t.Errorf("the install section shows\n%v\nsamples/00-gateway.yaml holds\n%v", shown, want)
	}
	for _, cmd := range []string{"kubectl apply -f samples/00-gateway.yaml", "kubectl wait --for=condition=Programmed gateway/egress -n " + namespace} {
		if !strings.Contains(section, cmd) {
			t.Errorf("the install section lacks %q", cmd)
		}
	}
}

// TestInstallSectionShowsManagerFlags: the README gives the command
// TestMakeDeployPassesManagerFlags runs.
func TestInstallSectionShowsManagerFlags(t *testing.T) {
	cmd := "make deploy IMG=" + exampleImage + " DEPLOY_BASE=examples/manager-flags"
	if !strings.Contains(readmeSection(t, "## Install on a cluster"), cmd) {
		t.Errorf("the install section lacks %q", cmd)
	}
}

// readmeSection returns the README's text under heading, up to the next level-2 heading.
func readmeSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README has no %q section", heading)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// fencedBlocks returns the contents of the text's code blocks fenced as lang.
func fencedBlocks(text, lang string) []string {
	var blocks []string
	for _, part := range strings.Split(text, "```"+lang+"\n")[1:] {
		if body, _, ok := strings.Cut(part, "```"); ok {
			blocks = append(blocks, body)
		}
	}
	return blocks
}
