package samples

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestParseExpectation: well-formed lines become the checks they say; malformed ones are
// refused with a message naming the problem, never a panic.
func TestParseExpectation(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		wantErr    string
		wantChecks int
	}{
		{name: "conditions with and without reason", line: "Backend apps/api Accepted=True/Accepted Programmed=True", wantChecks: 2},
		{name: "route parent", line: "HTTPRoute apps/api parent gw/egress ResolvedRefs=True", wantChecks: 1},
		{name: "policy ancestor", line: "BackendTLSPolicy apps/p ancestor gw/egress Accepted=True", wantChecks: 1},
		{name: "cluster-scoped object", line: "GatewayClass portcullis Accepted=True", wantChecks: 1},
		{name: "exists and JSONPath", line: "NetworkPolicy ns/p exists {.spec.policyTypes[0]}=Egress {.status.x}=", wantChecks: 3},
		{name: "quoted value with spaces", line: `Backend apps/api {.status.blockedAddresses[0].reason}="link-local (169.254.0.0/16)"`, wantChecks: 1},
		{name: "unbalanced quote", line: `Backend apps/api {.status.x}="a b`, wantErr: "unbalanced double quote"},
		{name: "bad quoted value", line: `Backend apps/api {.status.x}="a"b"c"`, wantErr: "not a valid double-quoted string"},
		{name: "too short", line: "Backend apps/api", wantErr: "want <Kind>"},
		{name: "unknown kind", line: "Pod apps/api Ready=True", wantErr: "unknown kind Pod"},
		{name: "namespaced kind without namespace", line: "Backend api Accepted=True", wantErr: "want <namespace>/<name>"},
		{name: "cluster-scoped kind with namespace", line: "GatewayClass ns/portcullis Accepted=True", wantErr: "without a namespace"},
		{name: "parent on a Backend", line: "Backend apps/api parent gw/egress Accepted=True", wantErr: `no "parent" status entries`},
		{name: "ancestor on a route", line: "HTTPRoute apps/r ancestor gw/egress Accepted=True", wantErr: `no "ancestor" status entries`},
		{name: "parent without checks", line: "HTTPRoute apps/r parent gw/egress", wantErr: "followed by checks"},
		{name: "bad status", line: "Backend apps/api Accepted=Yes", wantErr: "want exists"},
		{name: "lowercase condition", line: "Backend apps/api accepted=True", wantErr: "want exists"},
		{name: "JSONPath without value", line: "Backend apps/api {.status.ports}", wantErr: "want {<jsonpath>}=<value>"},
		{name: "broken JSONPath", line: "Backend apps/api {.status[}=x", wantErr: "{.status[}=x"},
		{name: "JSONPath on a parent entry", line: "HTTPRoute apps/r parent gw/egress {.status.x}=y", wantErr: "apply to the whole object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := parseExpectation(tc.line)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseExpectation(%q) error = %v, want one containing %q", tc.line, err, tc.wantErr)
				}
				return
			}
			if err != nil || len(e.checks) != tc.wantChecks {
				t.Fatalf("parseExpectation(%q) = %d checks, %v; want %d checks", tc.line, len(e.checks), err, tc.wantChecks)
			}
		})
	}
}

// TestParseRequirement: the three kinds of required objects, and refusals.
func TestParseRequirement(t *testing.T) {
	for _, tc := range []struct {
		name, line, wantCmd, wantErr string
	}{
		{name: "client certificate", line: "secret/tls apps/client", wantCmd: "kubectl create secret tls client -n apps --cert="},
		{name: "CA bundle", line: "configmap/ca apps/ca", wantCmd: "kubectl create configmap ca -n apps --from-file=ca.crt="},
		{name: "token", line: "secret/generic apps/tok token", wantCmd: "kubectl create secret generic tok -n apps --from-file=token="},
		{name: "unknown kind", line: "secret/docker apps/x", wantErr: "unknown kind secret/docker"},
		{name: "generic without key", line: "secret/generic apps/tok", wantErr: "needs the data key"},
		{name: "tls with extra words", line: "secret/tls apps/client tls.crt", wantErr: `unexpected "tls.crt"`},
		{name: "no namespace", line: "secret/tls client", wantErr: "want <namespace>/<name>"},
		{name: "empty", line: "", wantErr: "want <secret/tls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseRequirement(tc.line)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("parseRequirement(%q) error = %v, want one containing %q", tc.line, err, tc.wantErr)
				}
				return
			}
			if err != nil || r.command() != tc.wantCmd {
				t.Fatalf("parseRequirement(%q) command %q, %v; want %q", tc.line, r.command(), err, tc.wantCmd)
			}
		})
	}
}

// TestParseSampleHeader: the header ends at the first non-comment line, machine lines are
// separated from the prose, and a bad machine line names its line number.
func TestParseSampleHeader(t *testing.T) {
	good := "# Title\n#\n# Prose.\n#   kubectl wait --for=condition=Programmed gateway/g -n a\n# requires: secret/tls a/b\n# expect: Backend a/b Accepted=True\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n# not header\n"
	s, err := parseSample("x.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.description) != 3 || len(s.requires) != 1 || len(s.expects) != 1 || len(s.objects) != 1 {
		t.Fatalf("parsed %d description lines, %d requires, %d expects, %d objects; want 3, 1, 1, 1", len(s.description), len(s.requires), len(s.expects), len(s.objects))
	}
	if w := s.waitCommands(); len(w) != 1 || strings.Join(w[0], " ") != "wait --for=condition=Programmed gateway/g -n a" {
		t.Fatalf("waitCommands() = %q, want the header's kubectl wait", w)
	}
	_, err = parseSample("x.yaml", []byte("# Title\n# expect: Backend a/b Accepted=Maybe\nkind: Namespace\n"))
	if err == nil || !strings.Contains(err.Error(), "header line 2") {
		t.Fatalf("bad expect line: error %v, want one naming header line 2", err)
	}
	if _, err := parseSample("x.yaml", []byte("# Title\nkind: [unclosed\n")); err == nil {
		t.Fatal("malformed YAML was accepted")
	}
}

// TestVerifyCondition: status, reason and generation all have to match.
func TestVerifyCondition(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"kind":     "Backend",
		"metadata": map[string]any{"name": "b", "namespace": "n", "generation": int64(2)},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "all good here", "observedGeneration": int64(2)},
			map[string]any{"type": "Programmed", "status": "True", "reason": "Programmed", "observedGeneration": int64(1)},
		}},
	}}
	for _, tc := range []struct {
		name, line, wantErr string
	}{
		{name: "match", line: "Backend n/b Accepted=True/Accepted"},
		{name: "status only", line: "Backend n/b Accepted=True"},
		{name: "wrong reason", line: "Backend n/b Accepted=True/Invalid", wantErr: "want True/Invalid"},
		{name: "wrong status", line: "Backend n/b Accepted=False", wantErr: "is True/Accepted"},
		{name: "stale generation", line: "Backend n/b Programmed=True", wantErr: "generation 1, the object is at 2"},
		{name: "missing condition", line: "Backend n/b AddressesResolved=True", wantErr: "no AddressesResolved condition"},
		{name: "JSONPath match", line: "Backend n/b {.metadata.name}=b"},
		{name: "JSONPath absent is empty", line: "Backend n/b {.status.addresses}="},
		{name: "JSONPath mismatch", line: "Backend n/b {.metadata.name}=c", wantErr: `is "b", want "c"`},
		{name: "JSONPath quoted value with spaces", line: `Backend n/b {.status.conditions[0].message}="all good here"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := parseExpectation(tc.line)
			if err != nil {
				t.Fatal(err)
			}
			err = e.verify(obj)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("verify %q = %v, want error containing %q", tc.line, err, tc.wantErr)
			}
		})
	}
}
