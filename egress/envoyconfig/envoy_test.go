package envoyconfig

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	corsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/cors/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestStaticAcceptedByEnvoy runs every golden case's static bootstrap through the real
// Envoy in validate mode, which builds listeners, route tables, clusters, TLS contexts
// and upstream filters exactly as a running Envoy would, without binding or connecting.
func TestStaticAcceptedByEnvoy(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	opts := Options{SystemCAFile: writeFile(t, "system-ca.pem", sharedCA(t).certPEM)}
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			bs, err := Static(withRealPEM(t, tc.gw), opts, 0)
			if err != nil {
				t.Fatalf("Static: %v", err)
			}
			if out, err := envoyValidate(t, envoy, bs); err != nil {
				t.Fatalf("Envoy rejected the bootstrap: %v\n%s", err, out)
			}
		})
	}
}

// TestEnvoyValidateCatchesUpstreamFilterErrors shows that validate mode really checks
// upstream filters, so the acceptance above means something: the CORS filter, which is
// downstream only, is refused in a cluster's upstream filter chain.
func TestEnvoyValidateCatchesUpstreamFilterErrors(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	gw := goldenIR(t, "credential-injection")
	bs, err := Static(withRealPEM(t, gw), Options{SystemCAFile: writeFile(t, "ca.pem", sharedCA(t).certPEM)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	cluster := bs.StaticResources.Clusters[0]
	opts := &httpv3.HttpProtocolOptions{}
	if err := cluster.TypedExtensionProtocolOptions[httpProtocolOpts].UnmarshalTo(opts); err != nil {
		t.Fatal(err)
	}
	cors, _ := anypb.New(&corsv3.Cors{})
	opts.HttpFilters = append([]*hcmv3.HttpFilter{{Name: "envoy.filters.http.cors", ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: cors}}}, opts.HttpFilters...)
	packed, _ := anypb.New(opts)
	cluster.TypedExtensionProtocolOptions[httpProtocolOpts] = packed

	out, err := envoyValidate(t, envoy, bs)
	if err == nil {
		t.Fatal("Envoy accepted a downstream-only filter among upstream filters")
	}
	if !strings.Contains(string(out), "envoy.filters.http.cors") {
		t.Errorf("Envoy failed for another reason than the CORS upstream filter:\n%s", out)
	}
}

// envoyValidate writes the bootstrap as JSON and runs `envoy --mode validate` on it.
func envoyValidate(t *testing.T, envoy string, bs *bootstrapv3.Bootstrap) ([]byte, error) {
	t.Helper()
	j, err := protojson.Marshal(bs)
	if err != nil {
		t.Fatal(err)
	}
	path := writeFile(t, "bootstrap.json", j)
	cmd := exec.Command(envoy, "--mode", "validate", "-c", path, "--log-level", "warn", "--disable-hot-restart")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	return out.Bytes(), err
}

func writeFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
