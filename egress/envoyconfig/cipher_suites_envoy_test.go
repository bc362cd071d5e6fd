package envoyconfig

import (
	"strings"
	"testing"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/internal/testenv"
)

// TestSupportedCipherSuitesLoadInEnvoy: every cipher suite the API and the translator
// accept is one the real Envoy loads (it refuses a whole list when one name is unknown,
// so one bootstrap with all of them proves each); and a name outside the list, which
// the translator refuses, is one Envoy would reject, so the check is not just taste.
func TestSupportedCipherSuitesLoadInEnvoy(t *testing.T) {
	envoy := testenv.EnvoyBinary(t)
	opts := Options{SystemCAFile: writeFile(t, "system-ca.pem", sharedCA(t).certPEM)}
	tests := []struct {
		name    string
		suites  []string
		wantErr string
	}{
		{name: "every supported suite loads", suites: egressv1alpha1.SupportedCipherSuites},
		{name: "a TLS 1.3 name is rejected by Envoy", suites: []string{"TLS_AES_128_GCM_SHA256"}, wantErr: "Failed to initialize cipher suites"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gw := goldenIR(t, "tls-versions-ciphers-alpn")
			gw.Clusters[0].TLS.CipherSuites = tt.suites
			bs, err := Static(withRealPEM(t, gw), opts, 0)
			if err != nil {
				t.Fatalf("Static: %v", err)
			}
			out, err := envoyValidate(t, envoy, bs)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Envoy rejected the supported suites: %v\n%s", err, out)
			case tt.wantErr != "" && (err == nil || !strings.Contains(string(out), tt.wantErr)):
				t.Fatalf("Envoy: %v, want a failure containing %q\n%s", err, tt.wantErr, out)
			}
		})
	}
}
