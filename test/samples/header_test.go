package samples

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// TestEverySampleHasAHeader: each file opens with a title and a description a reader can
// follow, promises at least one checkable condition, tells the exact kubectl command for
// every object it requires (and to create the namespace first), and its expect lines
// name objects that the file creates or that a required command creates.
func TestEverySampleHasAHeader(t *testing.T) {
	for _, s := range loadSamples(t, samplesDir(t)) {
		t.Run(s.name, func(t *testing.T) {
			lines := strings.Split(s.headerText, "\n")
			switch {
			case len(s.objects) == 0:
				t.Fatal("the file holds no objects")
			case len(lines) == 0 || strings.TrimSpace(lines[0]) == "" || isMachineLine(lines[0]):
				t.Fatal("the header must start with a one-line title saying what the sample shows")
			case len(s.description) < 3:
				t.Fatalf("the header describes the sample in %d line(s); say what it shows and how to use it", len(s.description))
			case len(s.expects) == 0:
				t.Fatal("the header has no '# expect:' line: the test cannot prove the sample works")
			}
			for _, r := range s.requires {
				for _, cmd := range []string{"kubectl create namespace " + r.namespace, r.command()} {
					if !strings.Contains(s.headerText, cmd) {
						t.Errorf("requires %s %s/%s but the header does not tell the user to run %q", r.kind, r.namespace, r.name, cmd)
					}
				}
			}
			for _, e := range s.expects {
				if !s.declares(e) {
					t.Errorf("expect %q names an object the sample does not create", e.line)
				}
			}
		})
	}
}

func isMachineLine(line string) bool {
	return strings.HasPrefix(line, expectPrefix) || strings.HasPrefix(line, requiresPrefix)
}

// declares reports whether the sample creates the expected object itself, or whether the
// manager makes it for a namespace the sample locks down.
func (s *sample) declares(e expectation) bool {
	for _, o := range s.objects {
		if o.GetKind() == e.kind.gvk.Kind && o.GetName() == e.name && o.GetNamespace() == e.namespace {
			return true
		}
	}
	if e.kind.gvk.Kind == "NetworkPolicy" && e.name == "portcullis-egress-lockdown" {
		return s.locksDown(e.namespace)
	}
	return false
}

func (s *sample) locksDown(namespace string) bool {
	for _, ns := range s.objectsOf("Namespace") {
		if ns.GetName() == namespace && ns.GetLabels()["egress.portcullis.io/lockdown"] == "true" {
			return true
		}
	}
	return false
}

// useCases are the use cases samples/ documents, each with its file and a check that the
// file really shows it (so a renamed or gutted file cannot pass for it).
var useCases = []struct {
	name, file string
	shows      func(*sample) error
}{
	{"the shared Gateway", "00-gateway.yaml", showsGateway},
	{"FQDN Backend with system CAs", "01-fqdn-system-ca.yaml", showsSystemCA},
	{"FQDN Backend with a private CA", "02-fqdn-private-ca.yaml", backendHas("FQDN", "spec", "destination", "fqdn", "tls", "caCertificates")},
	{"FQDN Backend with a client certificate (mTLS)", "03-fqdn-mtls.yaml", backendHas("FQDN", "spec", "destination", "fqdn", "tls", "clientCertificate")},
	{"Service destination merged with a BackendTLSPolicy", "04-service-backendtlspolicy.yaml", showsServiceWithPolicy},
	{"credential injection", "05-credential-injection.yaml", showsExtensions("portcullis.io/credential-injection")},
	{"connection pool and circuit breaker", "06-connection-pool-circuit-breaker.yaml", showsExtensions("portcullis.io/connection-pool", "portcullis.io/circuit-breaker")},
	{"HTTP/2", "07-http2.yaml", showsHTTP2},
	{"an HTTPRoute splitting traffic between two Backends", "08-traffic-split.yaml", showsSplit},
	{"a namespace locked down to the gateway", "09-namespace-lockdown.yaml", showsLockdown},
	{"a Backend the DNS guard blocks, and its status", "10-dns-guard-blocked.yaml", showsBlocked},
	{"request headers set, added and removed", "11-request-header-modifier.yaml", showsExtensions("portcullis.io/request-header-modifier")},
	{"TLS passthrough and TCP (TLSRoute, TCPRoute)", "12-tls-tcp-passthrough.yaml", showsStreams},
}

// showsStreams: a Gateway with a TLS passthrough and a TCP listener, a TLSRoute and a
// TCPRoute to Backend ports of protocol TLS and TCP.
func showsStreams(s *sample) error {
	protocols := map[string]bool{}
	for _, gw := range s.objectsOf("Gateway") {
		listeners, _, _ := unstructured.NestedSlice(gw.Object, "spec", "listeners")
		for _, raw := range listeners {
			l, _ := raw.(map[string]any)
			p, _ := l["protocol"].(string)
			if mode, _, _ := unstructured.NestedString(l, "tls", "mode"); p == "TLS" && mode != "Passthrough" {
				continue
			}
			protocols[p] = true
		}
	}
	if !protocols["TLS"] || !protocols["TCP"] {
		return fmt.Errorf("want a Gateway with a TLS Passthrough and a TCP listener, have protocols %v", protocols)
	}
	if len(s.objectsOf("TLSRoute")) == 0 || len(s.objectsOf("TCPRoute")) == 0 {
		return fmt.Errorf("want a TLSRoute and a TCPRoute")
	}
	for _, want := range []string{"TLS", "TCP"} {
		if err := backendHasPortProtocol(s, want); err != nil {
			return err
		}
	}
	return nil
}

func backendHasPortProtocol(s *sample, protocol string) error {
	for _, b := range s.objectsOf("Backend") {
		ports, _, _ := unstructured.NestedSlice(b.Object, "spec", "destination", "ports")
		for _, raw := range ports {
			if p, _ := raw.(map[string]any); p["protocol"] == protocol {
				return nil
			}
		}
	}
	return fmt.Errorf("no Backend has a port of protocol %s", protocol)
}

// TestEveryExtensionTypeHasASample: each extension type the translator supports is used
// by some sample, with every one of its config keys, so a user can copy a working example.
func TestEveryExtensionTypeHasASample(t *testing.T) {
	used := map[string]map[string]bool{}
	for _, s := range loadSamples(t, samplesDir(t)) {
		for _, b := range s.objectsOf("Backend") {
			exts, _, _ := unstructured.NestedSlice(b.Object, "spec", "extensions")
			for _, raw := range exts {
				ext, _ := raw.(map[string]any)
				typ, _ := ext["type"].(string)
				cfg, _ := ext["config"].(map[string]any)
				if used[typ] == nil {
					used[typ] = map[string]bool{}
				}
				for k := range cfg {
					used[typ][k] = true
				}
			}
		}
	}
	for typ, keys := range translate.ExtensionKeys() {
		if used[typ] == nil {
			t.Errorf("no sample uses the extension %s", typ)
			continue
		}
		for _, k := range keys {
			if !used[typ][k] {
				t.Errorf("no sample sets config.%s of %s", k, typ)
			}
		}
	}
}

// TestEveryUseCaseHasASample: each documented use case has its file, and the file
// contains what the use case is about.
func TestEveryUseCaseHasASample(t *testing.T) {
	byName := map[string]*sample{}
	for _, s := range loadSamples(t, samplesDir(t)) {
		byName[s.name] = s
	}
	for _, uc := range useCases {
		t.Run(uc.name, func(t *testing.T) {
			s, ok := byName[uc.file]
			if !ok {
				t.Fatalf("no %s in samples/", filepath.Join("samples", uc.file))
			}
			if err := uc.shows(s); err != nil {
				t.Fatalf("%s does not show %s: %v", uc.file, uc.name, err)
			}
		})
	}
}

func showsGateway(s *sample) error {
	gws := s.objectsOf("Gateway")
	if len(gws) != 1 || len(s.objectsOf("GatewayClass")) != 1 {
		return fmt.Errorf("want one GatewayClass and one Gateway, have %d and %d", len(s.objectsOf("GatewayClass")), len(gws))
	}
	if gws[0].GetNamespace() != "egress-gateway" || gws[0].GetName() != "egress" {
		return fmt.Errorf("the Gateway is %s/%s; the other samples attach to egress-gateway/egress", gws[0].GetNamespace(), gws[0].GetName())
	}
	return nil
}

func showsSystemCA(s *sample) error {
	if err := backendHas("FQDN", "spec", "destination", "fqdn", "hostname")(s); err != nil {
		return err
	}
	for _, b := range s.objectsOf("Backend") {
		for _, f := range []string{"caCertificates", "insecureSkipVerify"} {
			if _, found, _ := unstructured.NestedFieldNoCopy(b.Object, "spec", "destination", "fqdn", "tls", f); found {
				return fmt.Errorf("Backend %s sets tls.%s, so it does not use the system CAs", b.GetName(), f)
			}
		}
	}
	return nil
}

// backendHas checks that some Backend of the destination type sets the field.
func backendHas(destType string, field ...string) func(*sample) error {
	return func(s *sample) error {
		for _, b := range s.objectsOf("Backend") {
			typ, _, _ := unstructured.NestedString(b.Object, "spec", "destination", "type")
			if _, found, _ := unstructured.NestedFieldNoCopy(b.Object, field...); found && typ == destType {
				return nil
			}
		}
		return fmt.Errorf("no %s Backend sets %s", destType, strings.Join(field, "."))
	}
}

func showsServiceWithPolicy(s *sample) error {
	if err := backendHas("Service", "spec", "destination", "kubernetesService", "tls", "clientCertificate")(s); err != nil {
		return err
	}
	for _, p := range s.objectsOf("BackendTLSPolicy") {
		refs, _, _ := unstructured.NestedSlice(p.Object, "spec", "targetRefs")
		for _, raw := range refs {
			ref, _ := raw.(map[string]any)
			for _, svc := range s.objectsOf("Service") {
				if ref["kind"] == "Service" && ref["name"] == svc.GetName() {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("no BackendTLSPolicy targets a Service of the sample")
}

func showsExtensions(types ...string) func(*sample) error {
	return func(s *sample) error {
		have := map[string]bool{}
		for _, b := range s.objectsOf("Backend") {
			exts, _, _ := unstructured.NestedSlice(b.Object, "spec", "extensions")
			for _, raw := range exts {
				ext, _ := raw.(map[string]any)
				typ, _ := ext["type"].(string)
				have[typ] = true
			}
		}
		for _, typ := range types {
			if !have[typ] {
				return fmt.Errorf("no Backend uses the extension %s", typ)
			}
		}
		return nil
	}
}

func showsHTTP2(s *sample) error {
	for _, b := range s.objectsOf("Backend") {
		if typ, _, _ := unstructured.NestedString(b.Object, "spec", "destination", "fqdn", "protocol", "type"); typ == "HTTP2" {
			return nil
		}
	}
	return fmt.Errorf("no FQDN Backend with protocol type HTTP2")
}

// showsSplit: one rule sends weighted shares to at least two different Backends.
func showsSplit(s *sample) error {
	for _, r := range s.objectsOf("HTTPRoute") {
		rules, _, _ := unstructured.NestedSlice(r.Object, "spec", "rules")
		for _, raw := range rules {
			refs, _, _ := unstructured.NestedSlice(raw.(map[string]any), "backendRefs")
			backends := map[string]bool{}
			for _, rr := range refs {
				ref, _ := rr.(map[string]any)
				if w, _ := ref["weight"].(float64); ref["kind"] == "Backend" && w > 0 { // YAML numbers decode as JSON numbers
					backends[ref["name"].(string)] = true
				}
			}
			if len(backends) >= 2 {
				return nil
			}
		}
	}
	return fmt.Errorf("no HTTPRoute rule gives weights to two or more Backends")
}

func showsLockdown(s *sample) error {
	for _, e := range s.expects {
		if e.kind.gvk.Kind == "NetworkPolicy" && s.locksDown(e.namespace) {
			return nil
		}
	}
	return fmt.Errorf("no labelled namespace with an expect line for its lockdown NetworkPolicy")
}

func showsBlocked(s *sample) error {
	for _, e := range s.expects {
		for _, c := range e.checks {
			if e.kind.gvk.Kind == "Backend" && c.condType == "AddressesResolved" && c.status == "False" && c.reason == "AllAddressesForbidden" {
				return nil
			}
		}
	}
	return fmt.Errorf("no expect line promises a Backend AddressesResolved=False/AllAddressesForbidden")
}
