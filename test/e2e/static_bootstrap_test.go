package e2e

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
	"github.com/portcullis-io/portcullis/internal/testenv"
	"github.com/portcullis-io/portcullis/internal/testpki"
	"github.com/portcullis-io/portcullis/internal/testupstream"
)

// TestStaticBootstrapServesTheSameTraffic runs `portcullis translate -o static-bootstrap`,
// checks `envoy --mode validate` accepts it, and sends scenario 1's request through an
// Envoy started from it, with no xDS server at all.
func TestStaticBootstrapServesTheSameTraffic(t *testing.T) {
	ca := testpki.NewCA(t, "e2e upstream CA")
	server := ca.Issue(t, testpki.Options{CommonName: "api", DNSNames: []string{"api.e2e.test"}})
	up := testupstream.Start(t, testupstream.Options{Certificate: &server.TLS, Name: "api"})
	port := xdstest.FreePort(t)
	s := scenario{Port: port, UpPort: up.Port(), Name: "api", Host: "api.e2e.test", CA: ca.CertPEM}
	input := filepath.Join(t.TempDir(), "egress.yaml")
	if err := os.WriteFile(input, []byte(expand(t, gatewayYAML+routeYAML+fqdnBackendYAML+caConfigMapYAML, s)), 0o600); err != nil {
		t.Fatal(err)
	}
	staticFor := func(admin uint32) ([]byte, error) {
		// The loopback upstream needs the same explicit exception the DNS guard would.
		return runPortcullis(t, "translate", "-f", input, "--address", "api.e2e.test=127.0.0.1",
			"--allow-cidr", "127.0.0.0/8", "--unrestricted-callers", "127.0.0.1/32", "-o", "static-bootstrap", "--admin-port", fmt.Sprint(admin))
	}
	config, err := staticFor(xdstest.FreePort(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := xdstest.Validate(t, config); err != nil {
		t.Fatalf("envoy --mode validate refused the static bootstrap: %v", err)
	}
	xdstest.Start(t, xdstest.Config{Bootstrap: staticFor})
	d := &dataPath{t: t, port: port}
	d.eventually(200, "api.e2e.test", "/static")
	last := up.Requests()[len(up.Requests())-1]
	if last.SNI != "api.e2e.test" || last.Path != "/static" {
		t.Fatalf("upstream saw %+v; want SNI api.e2e.test and path /static", last)
	}
}

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// runPortcullis runs the real portcullis binary, built once per test run.
func runPortcullis(t *testing.T, args ...string) ([]byte, error) {
	t.Helper()
	buildOnce.Do(func() {
		root, err := testenv.RepoRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "portcullis-e2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "portcullis")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/portcullis")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(binPath, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("portcullis %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes(), nil
}
