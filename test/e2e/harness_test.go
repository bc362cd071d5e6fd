// Package e2e drives the whole data path with real parts: Resources go through the
// translator and the Envoy builders to the xDS server, a real Envoy 1.40 serves them, and
// local TLS upstreams record what actually reached them.
package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"text/template"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
	"github.com/portcullis-io/portcullis/egress/xds"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// gatewayName is the Gateway every data-path test uses.
const gatewayName = "gw/egress"

// dataPath is an xDS server and one Envoy serving gatewayName.
type dataPath struct {
	t      *testing.T
	server *xds.Server
	envoy  *xdstest.Envoy
	// port is the Gateway listener port (>= 1024, so Envoy binds it as is).
	port uint32
	// metricsPort is Envoy's metrics listener, on loopback as the host provider binds it.
	metricsPort uint32
}

// allowAll is the test address policy: loopback upstreams must be reachable here, which
// the real DNS guard permits only through an explicit --allow-cidr exception.
type allowAll struct{}

func (allowAll) CheckAddr(netip.Addr) (bool, string) { return true, "" }

func startDataPath(t *testing.T) *dataPath {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	server := xds.New(testr.New(t))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); _ = server.Serve(ctx, lis) }()
	// Serve logs through the test's logger as it stops: wait for it, or a log line after
	// the test has completed panics the whole test binary.
	t.Cleanup(func() { cancel(); <-served })
	xdsPort, metricsPort := uint32(lis.Addr().(*net.TCPAddr).Port), xdstest.FreePort(t)
	envoy := xdstest.Start(t, xdstest.Config{Bootstrap: func(admin uint32) ([]byte, error) {
		return bootstrap.YAML(bootstrap.Options{Gateway: gatewayName, NodeID: "e2e", XDSAddress: "127.0.0.1", XDSPort: xdsPort,
			AdminPort: admin, MetricsPort: metricsPort})
	}})
	return &dataPath{t: t, server: server, envoy: envoy, port: xdstest.FreePort(t), metricsPort: metricsPort}
}

// apply translates the YAML (a text/template over data, with the funcs of tmplFuncs),
// publishes the result and waits until Envoy acknowledged it.
func (d *dataPath) apply(yamlTmpl string, data any, addrs egress.Addresses) translate.Result {
	d.t.Helper()
	res := loadResources(d.t, yamlTmpl, data)
	// The tests call through Envoy from 127.0.0.1, as the machine itself: unrestricted.
	// Upstreams listen on loopback, so Service endpoints there must be let through.
	result := translate.Translate(res, addrs, translate.Options{AddressPolicy: allowAll{}, AllowLoopbackEndpoints: true,
		Unrestricted: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}})
	var gw *ir.Gateway
	for i := range result.Gateways {
		if result.Gateways[i].Name == gatewayName {
			gw = &result.Gateways[i]
		}
	}
	if gw == nil {
		d.t.Fatalf("translation produced no IR for %s; statuses: %+v", gatewayName, result.Statuses.Gateways)
	}
	out, err := envoyconfig.Build(*gw, envoyconfig.Options{})
	if err != nil {
		d.t.Fatalf("build Envoy config: %v", err)
	}
	version, _, err := d.server.Publish(gatewayName, out)
	if err != nil {
		d.t.Fatalf("publish: %v", err)
	}
	xdstest.WaitFor(d.t, xdstest.Timeout, "Envoy acknowledges version "+version, func() error {
		st := d.server.Status(gatewayName)
		ok, reason, msg := st.Programmed()
		if st.Version != version || !ok {
			if reason == "Rejected" {
				return xdstest.Permanent(fmt.Errorf("rejected: %s", msg))
			}
			return fmt.Errorf("%s: %s", reason, msg)
		}
		return nil
	})
	return result
}

// get sends one request to the Gateway listener with the given Host and headers.
func (d *dataPath) get(host, path string, header ...string) (int, string, http.Header) {
	d.t.Helper()
	code, body, h, err := d.try(host, path, header...)
	if err != nil {
		d.t.Fatalf("GET %s%s: %v", host, path, err)
	}
	return code, body, h
}

// try is get without failing the test: a listener may not exist yet.
func (d *dataPath) try(host, path string, header ...string) (int, string, http.Header, error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d%s", d.port, path), nil)
	if err != nil {
		return 0, "", nil, err
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, nil
}

// eventually retries a request until it returns want: a new cluster may still be warming
// right after the ACK.
func (d *dataPath) eventually(want int, host, path string, header ...string) string {
	d.t.Helper()
	var last string
	xdstest.WaitFor(d.t, 10*time.Second, fmt.Sprintf("GET %s%s answers %d", host, path, want), func() error {
		code, body, _, err := d.try(host, path, header...)
		if err != nil {
			return err
		}
		last = body
		if code != want {
			return fmt.Errorf("got %d: %s", code, strings.TrimSpace(body))
		}
		return nil
	})
	return last
}

// loadResources expands a YAML template and loads it as Resources.
func loadResources(t *testing.T, yamlTmpl string, data any) *egress.Resources {
	t.Helper()
	text := expand(t, yamlTmpl, data)
	res := &egress.Resources{}
	if err := res.Load(strings.NewReader(text)); err != nil {
		t.Fatalf("load resources: %v\n%s", err, text)
	}
	return res
}

var tmplFuncs = template.FuncMap{
	"b64":   func(b []byte) string { return base64.StdEncoding.EncodeToString(b) },
	"quote": func(b []byte) string { return fmt.Sprintf("%q", string(b)) },
}

// resolved pins names to addresses, as the DNS guard would after vetting them.
func resolved(pairs ...string) egress.Addresses {
	out := egress.Addresses{}
	for i := 0; i+1 < len(pairs); i += 2 {
		res := out[pairs[i]]
		res.State = egress.ResolutionResolved
		res.Vetted = append(res.Vetted, egress.VettedAddress{IP: netip.MustParseAddr(pairs[i+1])})
		out[pairs[i]] = res
	}
	return out
}

// renderTo expands one template with its own data and escapes the result, so it can be
// appended to a template that is expanded again with different data.
func renderTo(t *testing.T, tmpl string, data any) string {
	t.Helper()
	return "{{`" + expand(t, tmpl, data) + "`}}"
}

// expand renders a YAML template with the data-path template functions.
func expand(t *testing.T, tmpl string, data any) string {
	t.Helper()
	parsed, err := template.New("yaml").Funcs(tmplFuncs).Parse(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := parsed.Execute(&buf, data); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}
