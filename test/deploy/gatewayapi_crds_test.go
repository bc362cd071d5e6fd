package deploy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

const gatewayAPIModule = "sigs.k8s.io/gateway-api"

// TestGatewayAPICRDCopiesMatchTheModule keeps config/crd/gateway-api equal to the
// standard channel of the sigs.k8s.io/gateway-api version in go.mod: same files, same
// bytes, same kustomization list. A version bump without 'make gateway-api-crds' fails here.
func TestGatewayAPICRDCopiesMatchTheModule(t *testing.T) {
	moduleDir, version := gatewayAPIModuleDir(t)
	standard := filepath.Join(moduleDir, "config", "crd", "standard")
	copies := repoPath(t, "config", "crd", "gateway-api")
	refresh := "run 'make gateway-api-crds' to copy " + gatewayAPIModule + " " + version

	want := yamlFiles(t, standard)
	got := yamlFiles(t, copies)
	if len(want) == 0 {
		t.Fatalf("no YAML files in %s", standard)
	}
	for _, name := range want {
		if !slices.Contains(got, name) {
			t.Errorf("config/crd/gateway-api/%s is missing; %s", name, refresh)
			continue
		}
		if !bytes.Equal(readFile(t, filepath.Join(standard, name)), readFile(t, filepath.Join(copies, name))) {
			t.Errorf("config/crd/gateway-api/%s differs from the module's; %s", name, refresh)
		}
	}
	for _, name := range got {
		if !slices.Contains(want, name) {
			t.Errorf("config/crd/gateway-api/%s is not in the module's standard channel; %s", name, refresh)
		}
	}

	// The module's config/crd/kustomization.yaml is the standard install: ours lists the
	// same files in the same order.
	var wantResources []string
	for _, r := range kustomizationResources(t, filepath.Join(moduleDir, "config", "crd", "kustomization.yaml")) {
		wantResources = append(wantResources, strings.TrimPrefix(r, "standard/"))
	}
	gotResources := kustomizationResources(t, filepath.Join(copies, "kustomization.yaml"))
	if !slices.Equal(gotResources, wantResources) {
		t.Errorf("config/crd/gateway-api/kustomization.yaml lists\n  %v\nthe module's standard install lists\n  %v\n%s",
			gotResources, wantResources, refresh)
	}
}

// gatewayAPIModuleDir returns where the go.mod version of the Gateway API module is, as
// the Makefile finds it, downloading it if needed.
func gatewayAPIModuleDir(t *testing.T) (dir, version string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "list", "-m", "-f", "{{.Dir}}\t{{.Version}}", gatewayAPIModule)
	cmd.Dir = repoPath(t)
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exitErr := (*exec.ExitError)(nil); errors.As(err, &exitErr) {
			stderr = exitErr.Stderr
		}
		t.Fatalf("go list -m %s: %v\n%s", gatewayAPIModule, err, stderr)
	}
	dir, version, _ = strings.Cut(strings.TrimSpace(string(out)), "\t")
	if dir == "" {
		t.Fatalf("go list -m %s printed no module directory (is the module downloaded?)", gatewayAPIModule)
	}
	return dir, version
}

// yamlFiles returns the names of the .yaml files in dir other than kustomization.yaml, sorted.
func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".yaml") && e.Name() != "kustomization.yaml" {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

func kustomizationResources(t *testing.T, path string) []string {
	t.Helper()
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, path), &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return k.Resources
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
