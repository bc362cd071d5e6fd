// Package conformance runs the official Gateway API conformance suite (the
// sigs.k8s.io/gateway-api/conformance module, GATEWAY-HTTP, GATEWAY-TLS and GATEWAY-TCP
// profiles) against Portcullis
// on a real cluster, and writes its report. `make conformance` runs it on the
// single-node cluster of `make cluster-up` with the manager deployed.
//
// The suite's callers are its own client pods and the test process on the node, not
// tenants, so it runs against the GatewayClass portcullis-conformance, annotated
// portcullis.io/tenant-isolation: "off" (README "Tenancy"). Everything else is the
// defaults a user gets. The features under test are the ones that class lists in its
// status (the suite reads them), so a feature is claimed only where it is proven.
//
//	KUBECONFIG                       the cluster (required)
//	PORTCULLIS_CONFORMANCE_REPORT    where to write the report (default ../../conformance/report.yaml)
//	PORTCULLIS_VERSION               the version named in the report (default "dev")
//	PORTCULLIS_CONFORMANCE_RUN_TEST  one test to run instead of the profile (debugging)
package conformance

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	"sigs.k8s.io/gateway-api/conformance"
	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/tests"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"
)

const (
	gatewayClassName = "portcullis-conformance"
	controllerName   = "portcullis.io/gateway-controller"
	isolationKey     = "portcullis.io/tenant-isolation"
)

// TestGatewayAPIConformance runs the GATEWAY-HTTP, -TLS and -TCP profiles, writes the report, and
// fails unless every core test and every extended test of a claimed feature passed.
func TestGatewayAPIConformance(t *testing.T) {
	opts := conformance.DefaultOptions(t)
	opts.GatewayClassName = gatewayClassName
	opts.ConformanceProfiles = []suite.ConformanceProfileName{
		suite.GatewayHTTPConformanceProfileName, suite.GatewayTLSConformanceProfileName, suite.GatewayTCPConformanceProfileName,
	}
	opts.Implementation = confv1.Implementation{
		Organization: "portcullis-io",
		Project:      "portcullis",
		URL:          "https://github.com/portcullis-io/portcullis",
		Version:      envOr("PORTCULLIS_VERSION", "dev"),
		Contact:      []string{"https://github.com/portcullis-io/portcullis/issues"},
	}
	// The cluster is torn down after the run; deleting the base namespaces first only
	// costs time.
	opts.CleanupBaseResources = false
	opts.RunTest = os.Getenv("PORTCULLIS_CONFORMANCE_RUN_TEST")
	ensureGatewayClass(t, opts.Client)

	cs, err := suite.NewConformanceTestSuite(opts)
	if err != nil {
		t.Fatalf("conformance suite: %v", err)
	}
	// Parallel tests run after this function returns: the report exists only in Cleanup.
	t.Cleanup(func() {
		report, err := cs.Report()
		if err != nil {
			t.Fatalf("conformance report: %v", err)
		}
		if opts.RunTest == "" {
			writeReport(t, report)
		}
		problems := reportProblems(report)
		for _, problem := range problems {
			t.Error(problem)
		}
		if len(problems) > 0 || t.Failed() {
			logDiagnostics(t, opts.RestConfig)
		}
	})
	cs.Setup(t, tests.ConformanceTests)
	if err := cs.Run(t, tests.ConformanceTests); err != nil {
		t.Fatalf("conformance run: %v", err)
	}
}

// ensureGatewayClass creates the class the suite runs against anew: ours, with tenant
// isolation off. Anew, because the suite reads the class's supportedFeatures once at
// the start, and a class left by an earlier run still carries what the manager of that
// run wrote; a new class's status comes from the manager deployed now.
func ensureGatewayClass(t *testing.T, c client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	old := &gwapiv1.GatewayClass{ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName}}
	if err := c.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
		t.Fatalf("deleting GatewayClass %s: %v", gatewayClassName, err)
	}
	for {
		err := c.Get(ctx, client.ObjectKey{Name: gatewayClassName}, &gwapiv1.GatewayClass{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("GatewayClass %s is still there a minute after its deletion: %v", gatewayClassName, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	gc := &gwapiv1.GatewayClass{
		ObjectMeta: metav1.ObjectMeta{Name: gatewayClassName, Annotations: map[string]string{isolationKey: "off"}},
		Spec:       gwapiv1.GatewayClassSpec{ControllerName: controllerName},
	}
	if err := c.Create(ctx, gc); err != nil {
		t.Fatalf("GatewayClass %s: %v", gatewayClassName, err)
	}
	waitAccepted(t, c)
}

// waitAccepted waits for the manager to accept the class and publish its features,
// which the suite reads once at the start.
func waitAccepted(t *testing.T, c client.Client) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		gc := &gwapiv1.GatewayClass{}
		err := c.Get(context.Background(), client.ObjectKey{Name: gatewayClassName}, gc)
		if err == nil && len(gc.Status.SupportedFeatures) > 0 && accepted(gc) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("GatewayClass %s is not Accepted with supportedFeatures after 2m (is the manager deployed?): %v %+v", gatewayClassName, err, gc.Status)
		}
		time.Sleep(time.Second)
	}
}

func accepted(gc *gwapiv1.GatewayClass) bool {
	for _, c := range gc.Status.Conditions {
		if c.Type == string(gwapiv1.GatewayClassConditionStatusAccepted) {
			return c.Status == metav1.ConditionTrue && c.ObservedGeneration == gc.Generation
		}
	}
	return false
}

// reportProblems lists what keeps the report from being a pass: a profile whose core
// tests did not all pass, or an extended test of a claimed feature that failed.
func reportProblems(r *confv1.ConformanceReport) []string {
	var out []string
	for _, p := range r.ProfileReports {
		if p.Core.Result != confv1.Success || p.Core.Failed > 0 {
			out = append(out, fmt.Sprintf("%s core: %s, failed %v", p.Name, p.Core.Result, p.Core.FailedTests))
		}
		if p.Extended != nil && p.Extended.Failed > 0 {
			out = append(out, fmt.Sprintf("%s extended: failed %v", p.Name, p.Extended.FailedTests))
		}
	}
	if len(r.ProfileReports) == 0 {
		out = append(out, "the report has no profile")
	}
	return out
}

// writeReport writes the report as YAML with a header naming how it was made.
func writeReport(t *testing.T, r *confv1.ConformanceReport) {
	t.Helper()
	path := envOr("PORTCULLIS_CONFORMANCE_REPORT", filepath.Join("..", "..", "conformance", "report.yaml"))
	body, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	header := strings.Join([]string{
		"# Gateway API conformance report, written by `make conformance` (test/conformance).",
		"# GatewayClass " + gatewayClassName + " with " + isolationKey + `: "off" (the suite's clients are`,
		"# not tenants); supported features read from the class's status. Do not edit by hand.",
		"",
	}, "\n")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append([]byte(header), body...), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("report written to %s", path)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
