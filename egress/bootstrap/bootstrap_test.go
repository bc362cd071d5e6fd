package bootstrap_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	httpv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/upstreams/http/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/bootstrap"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

func baseOptions() bootstrap.Options {
	return bootstrap.Options{
		Gateway:    "team-a/egress",
		NodeID:     "egress-7d9f-abcde",
		XDSAddress: "127.0.0.1",
		XDSPort:    18000,
		AdminPort:  19000,
	}
}

// tlsFiles writes a self-signed certificate, its key and (the same certificate as) a CA
// file, and returns the TLS options naming them.
func tlsFiles(t *testing.T) *bootstrap.XDSClientTLS {
	t.Helper()
	cert := xdstest.SelfSignedCert(t, "envoy", "portcullis-xds.portcullis-system.svc")
	dir := t.TempDir()
	files := map[string][]byte{"tls.crt": cert.CertPEM, "tls.key": cert.KeyPEM, "ca.crt": cert.CertPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return &bootstrap.XDSClientTLS{
		CertFile: filepath.Join(dir, "tls.crt"),
		KeyFile:  filepath.Join(dir, "tls.key"),
		CAFile:   filepath.Join(dir, "ca.crt"),
		SNI:      "portcullis-xds.portcullis-system.svc",
	}
}

func xdsCluster(t *testing.T, b *bootstrapv3.Bootstrap) *clusterv3.Cluster {
	t.Helper()
	clusters := b.GetStaticResources().GetClusters()
	if len(clusters) == 0 || clusters[0].GetName() != bootstrap.XDSClusterName {
		t.Fatalf("static clusters = %v, want %q first", clusters, bootstrap.XDSClusterName)
	}
	return clusters[0]
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*testing.T, *bootstrap.Options)
		wantType  clusterv3.Cluster_DiscoveryType
		wantAdmin string
		wantTLS   bool
	}{
		{
			name:      "IP address of the xDS server gives a STATIC cluster and a loopback admin",
			edit:      func(*testing.T, *bootstrap.Options) {},
			wantType:  clusterv3.Cluster_STATIC,
			wantAdmin: "127.0.0.1",
		},
		{
			name:      "DNS name of the xDS server gives a STRICT_DNS cluster",
			edit:      func(_ *testing.T, o *bootstrap.Options) { o.XDSAddress = "portcullis-xds.portcullis-system.svc" },
			wantType:  clusterv3.Cluster_STRICT_DNS,
			wantAdmin: "127.0.0.1",
		},
		{
			name:      "explicit admin address is kept",
			edit:      func(_ *testing.T, o *bootstrap.Options) { o.AdminAddress = "::1" },
			wantType:  clusterv3.Cluster_STATIC,
			wantAdmin: "::1",
		},
		{
			name:      "empty node ID is allowed for a bootstrap shared by replicas",
			edit:      func(_ *testing.T, o *bootstrap.Options) { o.NodeID = "" },
			wantType:  clusterv3.Cluster_STATIC,
			wantAdmin: "127.0.0.1",
		},
		{
			name:      "TLS options add an mTLS transport socket",
			edit:      func(t *testing.T, o *bootstrap.Options) { o.TLS = tlsFiles(t) },
			wantType:  clusterv3.Cluster_STATIC,
			wantAdmin: "127.0.0.1",
			wantTLS:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := baseOptions()
			tt.edit(t, &opts)
			b, err := bootstrap.Build(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.ValidateAll(); err != nil {
				t.Fatalf("ValidateAll: %v", err)
			}
			if got := b.GetNode().GetCluster(); got != opts.Gateway {
				t.Errorf("node.cluster = %q, want %q", got, opts.Gateway)
			}
			if got := b.GetNode().GetId(); got != opts.NodeID {
				t.Errorf("node.id = %q, want %q", got, opts.NodeID)
			}
			ads := b.GetDynamicResources().GetAdsConfig()
			if ads.GetGrpcServices()[0].GetEnvoyGrpc().GetClusterName() != bootstrap.XDSClusterName || !ads.GetSetNodeOnFirstMessageOnly() {
				t.Errorf("ads_config = %v", ads)
			}
			if b.GetDynamicResources().GetLdsConfig().GetAds() == nil || b.GetDynamicResources().GetCdsConfig().GetAds() == nil {
				t.Errorf("LDS and CDS must come by ADS: %v", b.GetDynamicResources())
			}
			sa := b.GetAdmin().GetAddress().GetSocketAddress()
			if sa.GetAddress() != tt.wantAdmin || sa.GetPortValue() != opts.AdminPort {
				t.Errorf("admin address = %s:%d, want %s:%d", sa.GetAddress(), sa.GetPortValue(), tt.wantAdmin, opts.AdminPort)
			}
			c := xdsCluster(t, b)
			if c.GetType() != tt.wantType {
				t.Errorf("xDS cluster type = %v, want %v", c.GetType(), tt.wantType)
			}
			var protocol httpv3.HttpProtocolOptions
			if err := c.GetTypedExtensionProtocolOptions()["envoy.extensions.upstreams.http.v3.HttpProtocolOptions"].UnmarshalTo(&protocol); err != nil {
				t.Fatal(err)
			}
			if protocol.GetExplicitHttpConfig().GetHttp2ProtocolOptions() == nil {
				t.Errorf("xDS cluster must speak HTTP/2 explicitly: %v", &protocol)
			}
			if got := c.GetTransportSocket() != nil; got != tt.wantTLS {
				t.Fatalf("transport socket present = %v, want %v", got, tt.wantTLS)
			}
			if tt.wantTLS {
				var tlsCtx tlsv3.UpstreamTlsContext
				if err := c.GetTransportSocket().GetTypedConfig().UnmarshalTo(&tlsCtx); err != nil {
					t.Fatal(err)
				}
				if tlsCtx.GetSni() != opts.TLS.SNI || tlsCtx.GetCommonTlsContext().GetTlsCertificates()[0].GetCertificateChain().GetFilename() != opts.TLS.CertFile {
					t.Errorf("upstream TLS context = %v", &tlsCtx)
				}
			}
		})
	}
}

func TestBuildRefuses(t *testing.T) {
	tests := []struct {
		name    string
		edit    func(*bootstrap.Options)
		wantErr string
	}{
		{"gateway without namespace", func(o *bootstrap.Options) { o.Gateway = "egress" }, "not <namespace>/<name>"},
		{"gateway with an extra slash", func(o *bootstrap.Options) { o.Gateway = "a/b/c" }, "not <namespace>/<name>"},
		{"admin on every IPv4 interface", func(o *bootstrap.Options) { o.AdminAddress = "0.0.0.0" }, "every interface"},
		{"admin on every IPv6 interface", func(o *bootstrap.Options) { o.AdminAddress = "::" }, "every interface"},
		{"admin address that is a name", func(o *bootstrap.Options) { o.AdminAddress = "localhost" }, "not an IP address"},
		{"admin port zero", func(o *bootstrap.Options) { o.AdminPort = 0 }, "admin port 0"},
		{"xDS port out of range", func(o *bootstrap.Options) { o.XDSPort = 70000 }, "xDS port 70000"},
		{"metrics port out of range", func(o *bootstrap.Options) { o.MetricsPort = 70000 }, "metrics port 70000"},
		{"metrics on the admin port", func(o *bootstrap.Options) { o.MetricsPort = o.AdminPort }, "also the admin or the readiness port"},
		{"metrics address that is a name", func(o *bootstrap.Options) { o.MetricsPort, o.MetricsAddress = 19002, "localhost" }, "metrics address"},
		{"no xDS address", func(o *bootstrap.Options) { o.XDSAddress = "" }, "xDS address is empty"},
		{"TLS without a CA file", func(o *bootstrap.Options) {
			o.TLS = &bootstrap.XDSClientTLS{CertFile: "/c", KeyFile: "/k"}
		}, "CA file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := baseOptions()
			tt.edit(&opts)
			_, err := bootstrap.Build(opts)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Build error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestYAMLIsTheBuiltBootstrap(t *testing.T) {
	opts := baseOptions()
	opts.XDSAddress = "portcullis-xds.portcullis-system.svc"
	built, err := bootstrap.Build(opts)
	if err != nil {
		t.Fatal(err)
	}
	out, err := bootstrap.YAML(opts)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(out)
	if err != nil {
		t.Fatal(err)
	}
	var parsed bootstrapv3.Bootstrap
	if err := protojson.Unmarshal(js, &parsed); err != nil {
		t.Fatalf("YAML output does not parse back: %v\n%s", err, out)
	}
	if !proto.Equal(built, &parsed) {
		t.Fatalf("YAML output differs from Build:\n%s", out)
	}
	again, err := bootstrap.YAML(opts)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(out) {
		t.Fatalf("YAML output is not stable:\n%s\n---\n%s", out, again)
	}
}

func TestEnvoyAcceptsBootstrap(t *testing.T) {
	tests := []struct {
		name string
		edit func(*testing.T, *bootstrap.Options)
	}{
		{"plaintext xDS to an IP address", func(*testing.T, *bootstrap.Options) {}},
		{"plaintext xDS to a DNS name", func(_ *testing.T, o *bootstrap.Options) { o.XDSAddress = "portcullis-xds.portcullis-system.svc" }},
		{"mTLS xDS with certificate files", func(t *testing.T, o *bootstrap.Options) { o.TLS = tlsFiles(t) }},
		{"readiness and metrics listeners of a pod", func(_ *testing.T, o *bootstrap.Options) {
			o.ReadinessPort, o.MetricsPort, o.MetricsAddress = bootstrap.PodReadinessPort, bootstrap.PodMetricsPort, "0.0.0.0"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := baseOptions()
			tt.edit(t, &opts)
			out, err := bootstrap.YAML(opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := xdstest.Validate(t, out); err != nil {
				t.Fatalf("%v\nbootstrap:\n%s", err, out)
			}
		})
	}
}

func TestEnvoyRefusesBrokenTLSFiles(t *testing.T) {
	// Guards the test above: validate mode really reads the TLS files.
	opts := baseOptions()
	opts.TLS = tlsFiles(t)
	if err := os.WriteFile(opts.TLS.KeyFile, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := bootstrap.YAML(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := xdstest.Validate(t, out); err == nil {
		t.Fatalf("Envoy accepted a bootstrap whose private key file holds no key")
	}
}
