package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// TestBackendPrinterColumnsTellTheTruth reads `kubectl get backends` as the API server
// renders it (the Table kubectl asks for) once the manager wrote real statuses: a
// healthy Backend reads True in every condition column with no reason; one whose client
// certificate Secret is missing reads False under Refs and Programmed, with the reason
// of the first False condition, so no column says True about what is broken.
func TestBackendPrinterColumnsTellTheTruth(t *testing.T) {
	w := newWorld(t)
	const ns = "columns"
	w.dns.Set("api.columns.test", "api.columns.test. 60 IN A 127.0.0.1")
	w.apply(egressGatewayYAML(ns, xdstest.FreePort(t), "Same") + fmt.Sprintf(`
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: healthy, namespace: %[1]s}
spec:
  destination:
    type: FQDN
    fqdn: {hostname: api.columns.test}
    ports: [{name: http, port: 9080, protocol: HTTP}]
---
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: missing-secret, namespace: %[1]s}
spec:
  destination:
    type: IP
    ip:
      address: 127.0.0.1
      tls: {clientCertificate: {secretRef: {name: absent}}}
    ports: [{name: https, port: 9443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: %[1]s}
spec:
  parentRefs: [{name: egress}]
  rules:
  - backendRefs: [{group: egress.portcullis.io, kind: Backend, name: healthy}]
  - matches: [{path: {type: PathPrefix, value: /broken}}]
    backendRefs: [{group: egress.portcullis.io, kind: Backend, name: missing-secret}]
`, ns))
	w.startEnvoy(ns + "/egress")
	healthy := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "healthy", Namespace: ns}}
	w.condition(healthy, func() []metav1.Condition { return healthy.Status.Conditions }, "Programmed", "True", "Programmed")
	broken := &egressv1alpha1.Backend{ObjectMeta: metav1.ObjectMeta{Name: "missing-secret", Namespace: ns}}
	w.condition(broken, func() []metav1.Condition { return broken.Status.Conditions }, "ResolvedRefs", "False", "InvalidCertificateRef")

	rows := backendTable(t, ns)
	tests := []struct {
		name, backend string
		want          map[string]any
	}{
		{name: "a healthy FQDN Backend is True in every condition column and has no reason", backend: "healthy",
			want: map[string]any{"Type": "FQDN", "Destination": "api.columns.test", "Ports": "9080/HTTP",
				"Accepted": "True", "Refs": "True", "Addresses": "True", "Programmed": "True", "Reason": nil}},
		{name: "a Backend whose Secret is missing is False under Refs and Programmed, with the reason", backend: "missing-secret",
			want: map[string]any{"Type": "IP", "Destination": "127.0.0.1", "Ports": "9443/HTTPS",
				"Accepted": "True", "Refs": "False", "Addresses": nil, "Programmed": "False", "Reason": "InvalidCertificateRef"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			row, ok := rows[tt.backend]
			if !ok {
				t.Fatalf("no row for Backend %s in %v", tt.backend, rows)
			}
			for col, want := range tt.want {
				if got := row[col]; got != want {
					t.Errorf("column %s = %#v, want %#v (row %v)", col, got, want, row)
				}
			}
		})
	}
}

// backendTable lists the Backends of a namespace as the server-side Table kubectl
// prints, each row by name and column name (a missing cell is nil).
func backendTable(t *testing.T, ns string) map[string]map[string]any {
	t.Helper()
	hc, err := rest.HTTPClientFor(api.Config)
	if err != nil {
		t.Fatal(err)
	}
	url := fmt.Sprintf("%s/apis/%s/namespaces/%s/backends", strings.TrimSuffix(api.Config.Host, "/"), egressv1alpha1.GroupVersion, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v: %s", url, resp.StatusCode, err, body)
	}
	var table metav1.Table
	if err := json.Unmarshal(body, &table); err != nil {
		t.Fatalf("decode Table: %v: %s", err, body)
	}
	out := map[string]map[string]any{}
	for _, r := range table.Rows {
		row := map[string]any{}
		for i, col := range table.ColumnDefinitions {
			if i < len(r.Cells) {
				row[col.Name] = r.Cells[i]
			}
		}
		out[fmt.Sprint(row["Name"])] = row
	}
	return out
}
