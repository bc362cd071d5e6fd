package deploy

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

const xbackendCRDFile = "gateway.networking.x-k8s.io_xbackends.yaml"

// TestXBackendCRDCopyMatchesTheModule keeps config/components/xbackend's CRD equal to
// the experimental channel's XBackend CRD of the sigs.k8s.io/gateway-api version in
// go.mod, and the directory a kustomize Component that lists only it. The experimental
// CRD is kept out of config/crd, which TestGatewayAPICRDCopiesMatchTheModule holds to
// the standard channel.
func TestXBackendCRDCopyMatchesTheModule(t *testing.T) {
	moduleDir, version := gatewayAPIModuleDir(t)
	want := readFile(t, filepath.Join(moduleDir, "config", "crd", "experimental", xbackendCRDFile))
	got := readFile(t, repoPath(t, "config", "components", "xbackend", xbackendCRDFile))
	if !bytes.Equal(got, want) {
		t.Errorf("config/components/xbackend/%s differs from the module's experimental channel; run 'make xbackend-crd' to copy %s %s",
			xbackendCRDFile, gatewayAPIModule, version)
	}
	var k struct {
		Kind      string   `json:"kind"`
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(readFile(t, repoPath(t, "config", "components", "xbackend", "kustomization.yaml")), &k); err != nil {
		t.Fatal(err)
	}
	if k.Kind != "Component" || len(k.Resources) != 1 || k.Resources[0] != xbackendCRDFile {
		t.Errorf("config/components/xbackend/kustomization.yaml is a %q listing %v; want a Component listing only %s", k.Kind, k.Resources, xbackendCRDFile)
	}
	if _, err := os.Stat(repoPath(t, "config", "crd", "gateway-api", xbackendCRDFile)); err == nil {
		t.Errorf("config/crd/gateway-api holds %s: the experimental CRD is installed only when asked", xbackendCRDFile)
	}
}

// TestMakeDeployInstallsXBackendOnlyWhenAsked runs 'make deploy' with a kubectl that
// prints what it would apply: the XBackend CRD is there with XBACKEND=true, exactly as
// the module ships it, and absent without.
func TestMakeDeployInstallsXBackendOnlyWhenAsked(t *testing.T) {
	fake := filepath.Join(t.TempDir(), "kubectl")
	script := "#!/bin/sh\n# 'apply --server-side -k DIR' prints what it would apply\nexec " + testenv.KubectlBinary(t) + " kustomize \"$4\"\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	crds := func(extra ...string) map[string]map[string]any {
		t.Helper()
		args := append([]string{"-s", "--no-print-directory", "-C", repoPath(t), "deploy", "KUBECTL=" + fake}, extra...)
		out, err := exec.Command("make", args...).Output()
		if err != nil {
			t.Fatalf("make %s: %v", strings.Join(args[4:], " "), err)
		}
		objs, err := decodeObjects(out)
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]map[string]any{}
		for _, o := range objs {
			if o.GetKind() == "CustomResourceDefinition" {
				found[o.GetName()] = o.Object
			}
		}
		return found
	}
	const name = "xbackends.gateway.networking.x-k8s.io"
	if _, ok := crds()[name]; ok {
		t.Errorf("make deploy installs %s without XBACKEND=true", name)
	}
	with := crds("XBACKEND=true")
	if _, ok := with["backends.egress.portcullis.io"]; !ok {
		t.Fatalf("make deploy XBACKEND=true renders no Backend CRD: %d CRDs", len(with))
	}
	moduleDir, _ := gatewayAPIModuleDir(t)
	var want map[string]any
	if err := yaml.Unmarshal(readFile(t, filepath.Join(moduleDir, "config", "crd", "experimental", xbackendCRDFile)), &want); err != nil {
		t.Fatal(err)
	}
	got, ok := with[name]
	if !ok {
		t.Fatalf("make deploy XBACKEND=true does not install %s", name)
	}
	if a, b := mustYAML(t, got), mustYAML(t, want); a != b {
		t.Errorf("make deploy XBACKEND=true installs an XBackend CRD other than the module's")
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
