package samples

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/internal/testpki"
)

// requirement is one "# requires:" line: an object the user creates before applying the
// sample, because it holds key material that is never committed.
//
//	requires: secret/tls <namespace>/<name>            a kubernetes.io/tls client certificate
//	requires: configmap/ca <namespace>/<name>          a CA certificate under ca.crt
//	requires: secret/generic <namespace>/<name> <key>  an opaque value (a token) under key
type requirement struct {
	kind            string // secret/tls, configmap/ca or secret/generic
	namespace, name string
	key             string // secret/generic only
}

var dataKey = regexp.MustCompile(`^[-._a-zA-Z0-9]+$`)

// parseRequirement parses the text after "requires:".
func parseRequirement(text string) (requirement, error) {
	f := strings.Fields(text)
	if len(f) < 2 {
		return requirement{}, fmt.Errorf("requires %q: want <secret/tls|configmap/ca|secret/generic> <namespace>/<name> [key]", text)
	}
	r := requirement{kind: f[0]}
	var err error
	if r.namespace, r.name, err = parseTarget(f[1], true); err != nil {
		return r, fmt.Errorf("requires %q: %w", text, err)
	}
	switch {
	case r.kind != "secret/tls" && r.kind != "configmap/ca" && r.kind != "secret/generic":
		return r, fmt.Errorf("requires %q: unknown kind %s; use secret/tls, configmap/ca or secret/generic", text, r.kind)
	case r.kind == "secret/generic" && (len(f) != 3 || !dataKey.MatchString(f[2])):
		return r, fmt.Errorf("requires %q: secret/generic needs the data key, e.g. secret/generic ns/name token", text)
	case r.kind != "secret/generic" && len(f) != 2:
		return r, fmt.Errorf("requires %q: unexpected %q after the name", text, strings.Join(f[2:], " "))
	}
	if len(f) == 3 {
		r.key = f[2]
	}
	return r, nil
}

// command is the start of the kubectl command the sample's header must tell the user to
// run; the file arguments after it are the user's own.
func (r requirement) command() string {
	switch r.kind {
	case "secret/tls":
		return fmt.Sprintf("kubectl create secret tls %s -n %s --cert=", r.name, r.namespace)
	case "configmap/ca":
		return fmt.Sprintf("kubectl create configmap %s -n %s --from-file=ca.crt=", r.name, r.namespace)
	}
	return fmt.Sprintf("kubectl create secret generic %s -n %s --from-file=%s=", r.name, r.namespace, r.key)
}

// material is the key material the test hands to kubectl: one CA, a client certificate
// it issued, and a random token. The test checks that none of it is ever logged.
type material struct {
	dir                       string
	caFile, certFile, keyFile string
	tokenFile                 string
	token                     string
	keyPEM                    []byte
}

func newMaterial(t *testing.T) *material {
	t.Helper()
	ca := testpki.NewCA(t, "Portcullis samples test CA")
	client := ca.Issue(t, testpki.Options{CommonName: "samples-client", Client: true})
	raw := make([]byte, 24)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	m := &material{dir: t.TempDir(), token: "sample-token-" + hex.EncodeToString(raw), keyPEM: client.KeyPEM}
	m.caFile, m.certFile, m.keyFile, m.tokenFile = m.write(t, "ca.crt", ca.CertPEM), m.write(t, "client.crt", client.CertPEM),
		m.write(t, "client.key", client.KeyPEM), m.write(t, "token.txt", []byte(m.token))
	return m
}

func (m *material) write(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(m.dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// args are the kubectl arguments that create the required object from the material.
func (r requirement) args(m *material) []string {
	switch r.kind {
	case "secret/tls":
		return []string{"create", "secret", "tls", r.name, "-n", r.namespace, "--cert=" + m.certFile, "--key=" + m.keyFile}
	case "configmap/ca":
		return []string{"create", "configmap", r.name, "-n", r.namespace, "--from-file=ca.crt=" + m.caFile}
	}
	return []string{"create", "secret", "generic", r.name, "-n", r.namespace, "--from-file=" + r.key + "=" + m.tokenFile}
}
