// Package demo runs the stand-in for an outside API that `portcullis local --demo`
// sends traffic to: an HTTPS service with its own CA that requires a client
// certificate, a DNS server that answers its name with 127.0.0.1, and the ConfigMap and
// Secret the demo's Backend refers to.
package demo

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/portcullis-io/portcullis/internal/localenv"
	demosamples "github.com/portcullis-io/portcullis/samples/demo"
)

// The names and ports samples/demo uses.
const (
	Hostname     = "api.demo.portcullis.test"
	APIPort      = 19443
	Namespace    = "demo"
	Gateway      = "demo"
	Backend      = "demo-api"
	CAConfigMap  = "demo-api-ca"
	ClientSecret = "demo-api-client"
	// ClientCommonName is the subject of the certificate the gateway presents.
	ClientCommonName = "portcullis-demo-gateway"
	// AllowCIDR is the DNS guard exception the demo needs: its API is on loopback.
	AllowCIDR = "127.0.0.0/8"
)

// Demo is a running demo API and DNS server.
type Demo struct {
	API *API
	DNS *DNS

	ca     *localenv.CA
	client localenv.KeyPair
}

// Start makes the demo CA and certificates and starts the API on 127.0.0.1:APIPort and
// the DNS server on a free loopback port. Names other than Hostname are forwarded to
// upstream (DNS servers as IP:port; none: refused).
func Start(upstream []string) (*Demo, error) {
	d, server, err := newCredentials()
	if err != nil {
		return nil, err
	}
	if d.API, err = StartAPI(net.JoinHostPort("127.0.0.1", strconv.Itoa(APIPort)), server, d.ca.Pool()); err != nil {
		return nil, fmt.Errorf("demo API: %w (is another portcullis local --demo running?)", err)
	}
	if d.DNS, err = StartDNS(map[string]net.IP{Hostname: net.IPv4(127, 0, 0, 1)}, upstream); err != nil {
		d.API.Close()
		return nil, fmt.Errorf("demo DNS server: %w", err)
	}
	return d, nil
}

// newCredentials makes the demo CA, the API's server certificate and the gateway's
// client certificate; it returns the Demo without servers, and the server pair.
func newCredentials() (*Demo, localenv.KeyPair, error) {
	ca, err := localenv.NewCA("portcullis-demo-ca")
	if err != nil {
		return nil, localenv.KeyPair{}, err
	}
	server, err := ca.Issue(localenv.CertSpec{CommonName: Hostname, DNSNames: []string{Hostname}, Server: true})
	if err != nil {
		return nil, localenv.KeyPair{}, err
	}
	client, err := ca.Issue(localenv.CertSpec{CommonName: ClientCommonName, Client: true})
	if err != nil {
		return nil, localenv.KeyPair{}, err
	}
	return &Demo{ca: ca, client: client}, server, nil
}

// Close stops the API and the DNS server.
func (d *Demo) Close() error { return errors.Join(d.API.Close(), d.DNS.Close()) }

// Objects returns what to apply, in order: samples/demo with the CA ConfigMap and the
// client-certificate Secret right after the namespace they live in.
func (d *Demo) Objects() ([]*unstructured.Unstructured, error) {
	samples, err := localenv.DecodeDir(demosamples.Files, ".")
	if err != nil {
		return nil, fmt.Errorf("samples/demo: %w", err)
	}
	var out, rest []*unstructured.Unstructured
	for _, o := range samples {
		if o.GetKind() == "Namespace" {
			out = append(out, o)
		} else {
			rest = append(rest, o)
		}
	}
	out = append(out, d.caConfigMap(), d.clientSecret())
	return append(out, rest...), nil
}

func (d *Demo) caConfigMap() *unstructured.Unstructured {
	return object("v1", "ConfigMap", CAConfigMap, map[string]any{"data": map[string]any{"ca.crt": string(d.ca.CertPEM)}})
}

func (d *Demo) clientSecret() *unstructured.Unstructured {
	return object("v1", "Secret", ClientSecret, map[string]any{
		"type":       "kubernetes.io/tls",
		"stringData": map[string]any{"tls.crt": string(d.client.CertPEM), "tls.key": string(d.client.KeyPEM)},
	})
}

func object(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: fields}
	o.SetAPIVersion(apiVersion)
	o.SetKind(kind)
	o.SetNamespace(Namespace)
	o.SetName(name)
	return o
}

// GatewayPort is the port of the demo Gateway's listener (Envoy binds it at 10080).
const GatewayPort = 80
