package conformance

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// digestLog is the shape of a failed run's output: parallel subtests interleaved under
// go test -v headers, diagnostics, then the results.
const digestLog = `=== RUN   TestGatewayAPIConformance/BackendTLSPolicySANValidation/multi_SAN
    http.go:325: 02:27:25Z: Response expectation failed for request: {Path:/multiple-sans}  not ready yet: expected status code to be one of [200], got 400 (after 1s)
=== NAME  TestGatewayAPIConformance/HTTPRouteSimpleSameNamespace
    http.go:325: 02:27:26Z: Response expectation failed for request: {Path:/}  not ready yet: expected status code to be one of [200], got 404 (after 1s)
=== NAME  TestGatewayAPIConformance/BackendTLSPolicySANValidation/multi_SAN
    http.go:325: 02:27:54Z: Response expectation failed for request: {Path:/multiple-sans}  not ready yet: expected status code to be one of [200], got 400 (after 29s)
    http.go:306: 02:27:54Z: timeout while waiting after 30 attempts, 0/1 successes
    conformance_test.go:84:   {"backend":"ns/multiple-sans-test","responseCode":400,"responseFlags":"-"}
--- FAIL: TestGatewayAPIConformance (143.90s)
    --- PASS: TestGatewayAPIConformance/HTTPRouteSimpleSameNamespace (2.00s)
    --- FAIL: TestGatewayAPIConformance/BackendTLSPolicySANValidation (31.65s)
        --- FAIL: TestGatewayAPIConformance/BackendTLSPolicySANValidation/multi_SAN (30.00s)
FAIL
`

// TestDigestTellsWhatTheFailingSubtestsGotBack: hack/conformance-digest.sh, which make
// conformance runs when the suite fails, names each failing subtest with its last
// waiting lines (not another test's that ran in between) and the last error audit
// lines.
func TestDigestTellsWhatTheFailingSubtestsGotBack(t *testing.T) {
	log := filepath.Join(t.TempDir(), "conformance.log")
	if err := os.WriteFile(log, []byte(digestLog), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "../../hack/conformance-digest.sh", log).CombinedOutput()
	if err != nil {
		t.Fatalf("digest: %v\n%s", err, out)
	}
	digest := string(out)
	for _, want := range []string{
		"  FAIL TestGatewayAPIConformance/BackendTLSPolicySANValidation/multi_SAN\n",
		"got 400 (after 29s)",
		"timeout while waiting after 30 attempts",
		`"responseCode":400`,
	} {
		if !strings.Contains(digest, want) {
			t.Errorf("the digest lacks %q:\n%s", want, digest)
		}
	}
	for _, unwanted := range []string{"got 404", "FAIL TestGatewayAPIConformance/HTTPRouteSimpleSameNamespace", "got 400 (after 1s)"} {
		if strings.Contains(digest, unwanted) {
			t.Errorf("the digest has %q, from a passing test or an older line:\n%s", unwanted, digest)
		}
	}
}
