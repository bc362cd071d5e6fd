// Package bootstrap builds the Envoy bootstrap of one Gateway's Envoy fleet: who the
// Envoy is (node.cluster names the Gateway), where the xDS server is (a static cluster
// reached over HTTP/2, optionally with mTLS), and everything else arrives by ADS.
//
// The bootstrap references no file except the TLS files the caller names, so it runs
// the same way in a Pod (from a ConfigMap) and locally.
package bootstrap

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	bootstrapv3 "github.com/envoyproxy/go-control-plane/envoy/config/bootstrap/v3"
	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"
)

// XDSClusterName is the static cluster through which Envoy reaches the xDS server.
const XDSClusterName = "portcullis-xds"

// DefaultAdminAddress is where the admin interface listens when Options.AdminAddress is empty.
const DefaultAdminAddress = "127.0.0.1"

// Options describe one Envoy of a Gateway's fleet.
type Options struct {
	// Gateway is "<namespace>/<name>"; it becomes node.cluster, the key under which the
	// xDS server keeps the Gateway's snapshot.
	Gateway string
	// NodeID is node.id. It may be empty when every replica shares one bootstrap; Envoy
	// then needs `--service-node <id>` on its command line.
	NodeID string
	// XDSAddress is an IP address or a DNS name of the xDS server; XDSPort its port.
	XDSAddress string
	XDSPort    uint32
	// AdminAddress is the IP address the admin interface binds; DefaultAdminAddress when
	// empty. An unspecified address (0.0.0.0, ::) is refused.
	AdminAddress string
	AdminPort    uint32
	// TLS, when set, makes Envoy reach the xDS server with mutual TLS.
	TLS *XDSClientTLS
	// ReadinessPort, when set, adds a listener on 0.0.0.0 at that port answering only
	// GET /ready (see readiness.go): what a kubelet probes in a pod.
	ReadinessPort uint32
	// MetricsPort, when set, adds a listener at MetricsAddress:MetricsPort serving only
	// GET /stats/prometheus from the admin interface (see metrics.go): what Prometheus
	// scrapes, never the rest of the admin interface.
	MetricsPort uint32
	// MetricsAddress is the IP address the metrics listener binds: 0.0.0.0 in a pod
	// (Prometheus scrapes the pod's IP), loopback on a host. DefaultAdminAddress when
	// empty.
	MetricsAddress string
}

// XDSClientTLS names the files Envoy uses to reach an mTLS xDS server.
type XDSClientTLS struct {
	// CertFile and KeyFile hold Envoy's client certificate chain and private key (PEM).
	CertFile string
	KeyFile  string
	// CAFile holds the CA certificates that sign the xDS server's certificate (PEM).
	CAFile string
	// SNI is sent in the TLS handshake and, when set, must be a DNS SAN of the server's
	// certificate.
	SNI string
}

// Build returns the bootstrap for opts. The result passes ValidateAll.
func Build(opts Options) (*bootstrapv3.Bootstrap, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	overload, err := overloadManager()
	if err != nil {
		return nil, err
	}
	static, err := staticResources(opts)
	if err != nil {
		return nil, err
	}
	b := &bootstrapv3.Bootstrap{
		Node:             &corev3.Node{Id: opts.NodeID, Cluster: opts.Gateway},
		DynamicResources: dynamicResources(),
		StaticResources:  static,
		Admin:            admin(opts),
		LayeredRuntime:   LayeredRuntime(),
		OverloadManager:  overload,
	}
	if err := b.ValidateAll(); err != nil {
		return nil, fmt.Errorf("bootstrap for %s is invalid: %w", opts.Gateway, err)
	}
	return b, nil
}

// staticResources are the xDS cluster and, when their ports are set, the readiness
// listener and the metrics listener with its cluster to the admin interface.
func staticResources(opts Options) (*bootstrapv3.Bootstrap_StaticResources, error) {
	xds, err := xdsCluster(opts)
	if err != nil {
		return nil, err
	}
	static := &bootstrapv3.Bootstrap_StaticResources{Clusters: []*clusterv3.Cluster{xds}}
	if opts.ReadinessPort != 0 {
		ready, err := readinessListener(opts.ReadinessPort)
		if err != nil {
			return nil, err
		}
		static.Listeners = append(static.Listeners, ready)
	}
	if opts.MetricsPort != 0 {
		metrics, err := metricsListener(opts)
		if err != nil {
			return nil, err
		}
		static.Listeners = append(static.Listeners, metrics)
		static.Clusters = append(static.Clusters, adminCluster(opts))
	}
	return static, nil
}

// YAML returns the bootstrap for opts as YAML, the form Envoy's -c flag reads.
func YAML(opts Options) ([]byte, error) {
	b, err := Build(opts)
	if err != nil {
		return nil, err
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("marshal bootstrap: %w", err)
	}
	return yaml.JSONToYAML(js)
}

func (o Options) withDefaults() (Options, error) {
	if o.AdminAddress == "" {
		o.AdminAddress = DefaultAdminAddress
	}
	if o.MetricsAddress == "" {
		o.MetricsAddress = DefaultAdminAddress
	}
	return o, o.validate()
}

func (o Options) validate() error {
	var errs []error
	ns, name, ok := strings.Cut(o.Gateway, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		errs = append(errs, fmt.Errorf("gateway %q is not <namespace>/<name>", o.Gateway))
	}
	if o.XDSAddress == "" {
		errs = append(errs, errors.New("xDS address is empty"))
	}
	if o.XDSPort == 0 || o.XDSPort > 65535 {
		errs = append(errs, fmt.Errorf("xDS port %d is out of range", o.XDSPort))
	}
	if o.AdminPort == 0 || o.AdminPort > 65535 {
		errs = append(errs, fmt.Errorf("admin port %d is out of range", o.AdminPort))
	}
	if ip, err := netip.ParseAddr(o.AdminAddress); err != nil {
		errs = append(errs, fmt.Errorf("admin address %q is not an IP address", o.AdminAddress))
	} else if ip.IsUnspecified() {
		errs = append(errs, fmt.Errorf("admin address %s would expose the admin interface on every interface", o.AdminAddress))
	}
	if o.MetricsPort > 65535 {
		errs = append(errs, fmt.Errorf("metrics port %d is out of range", o.MetricsPort))
	} else if o.MetricsPort != 0 && (o.MetricsPort == o.AdminPort || o.MetricsPort == o.ReadinessPort) {
		errs = append(errs, fmt.Errorf("metrics port %d is also the admin or the readiness port", o.MetricsPort))
	}
	if _, err := netip.ParseAddr(o.MetricsAddress); err != nil {
		errs = append(errs, fmt.Errorf("metrics address %q is not an IP address", o.MetricsAddress))
	}
	if o.TLS != nil {
		errs = append(errs, o.TLS.validate())
	}
	return errors.Join(errs...)
}

func (t *XDSClientTLS) validate() error {
	if t.CertFile == "" || t.KeyFile == "" || t.CAFile == "" {
		return errors.New("xDS client TLS needs a certificate, a key and a CA file")
	}
	return nil
}
