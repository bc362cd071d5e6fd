package translate

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress"
)

// manyBackends is an input of n mutual-TLS FQDN Backends, enough for prefetching to run,
// each with its own client certificate and CA Secrets (same PEM content, other names).
func manyBackends(t *testing.T, n int) (*egress.Resources, egress.Addresses) {
	t.Helper()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "certs", name))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%q", b)
	}
	var doc strings.Builder
	doc.WriteString(classYAML + `apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: egress, namespace: gw}
spec:
  gatewayClassName: portcullis
  listeners: [{name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}]
`)
	addrs := egress.Addresses{}
	for i := range n {
		host := fmt.Sprintf("api%d.example.com", i)
		addrs[host] = egress.Resolution{State: egress.ResolutionResolved}
		fmt.Fprintf(&doc, `---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api%[1]d, namespace: apps}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: %[2]s
      tls: {caCertificates: [{secretRef: {name: ca%[1]d}}], clientCertificate: {secretRef: {name: client%[1]d}}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api%[1]d, namespace: apps}
spec:
  parentRefs: [{name: egress, namespace: gw}]
  hostnames: [%[2]s]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api%[1]d}]}]
---
apiVersion: v1
kind: Secret
metadata: {name: client%[1]d, namespace: apps}
type: kubernetes.io/tls
stringData: {tls.crt: %[3]s, tls.key: %[4]s}
---
apiVersion: v1
kind: Secret
metadata: {name: ca%[1]d, namespace: apps}
stringData: {ca.crt: %[5]s}
`, i, host, read("client.crt"), read("client.key"), read("ca.crt"))
	}
	res := &egress.Resources{}
	if err := res.Load(strings.NewReader(doc.String())); err != nil {
		t.Fatal(err)
	}
	return res, addrs
}

// TestPrefetchedTranslationEqualsOneByOne translates 100 Backends at once (their
// certificates are prefetched in parallel) and compares each Backend's cluster and
// status with a translation of that Backend alone (too small to prefetch).
func TestPrefetchedTranslationEqualsOneByOne(t *testing.T) {
	const n = 100
	res, addrs := manyBackends(t, n)
	opts := Options{Now: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), Cache: NewCache()}
	all := Translate(res, addrs, opts)
	if len(opts.Cache.pairs) != 1 || len(opts.Cache.bundles) != 1 {
		t.Errorf("cache holds %d key pairs and %d bundles, want the one of each all Backends share", len(opts.Cache.pairs), len(opts.Cache.bundles))
	}
	if len(all.Gateways) != 1 || len(all.Gateways[0].Clusters) != n {
		t.Fatalf("%d Gateways; want 1 with %d clusters", len(all.Gateways), n)
	}
	clusters := map[string]any{}
	for _, c := range all.Gateways[0].Clusters {
		clusters[c.Name] = c
	}
	for i := range n {
		alone := &egress.Resources{GatewayClasses: res.GatewayClasses, Gateways: res.Gateways,
			Backends: res.Backends[i : i+1], HTTPRoutes: res.HTTPRoutes[i : i+1], Secrets: res.Secrets[2*i : 2*i+2]}
		opts.Cache = NewCache()
		one := Translate(alone, addrs, opts)
		key := "apps/" + res.Backends[i].Name
		c := one.Gateways[0].Clusters[0]
		if !reflect.DeepEqual(clusters[c.Name], c) || !reflect.DeepEqual(one.Statuses.Backends[key], all.Statuses.Backends[key]) {
			t.Fatalf("Backend %s translates differently alone", key)
		}
	}
}
