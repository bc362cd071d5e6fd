package infra

import (
	"fmt"
	"path"

	"google.golang.org/protobuf/encoding/protojson"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/controllers/xdscerts"
	"github.com/portcullis-io/portcullis/egress/bootstrap"
)

// Paths inside the Envoy container.
const (
	// BootstrapKey is the ConfigMap key holding the bootstrap, mounted in bootstrapDir.
	BootstrapKey = "bootstrap.yaml"
	bootstrapDir = "/etc/portcullis/bootstrap"
	// XDSClientDir is where the Secret xdscerts.EnvoyClientSecretName is mounted: tls.crt,
	// tls.key and ca.crt.
	XDSClientDir = "/etc/portcullis/xds-client"
	// AdminPort is the admin interface's port, on 127.0.0.1 inside the pod.
	AdminPort = bootstrap.PodAdminPort
)

// podBootstrap describes the bootstrap of a Gateway's pods.
type podBootstrap struct {
	gateway       string // <namespace>/<name>
	xdsAddress    string
	xdsPort       uint32
	serverName    string
	certDir       string
	adminPort     uint32
	readinessPort uint32
	metricsPort   uint32
}

// yaml returns the bootstrap: the shared builder's (no node ID: every replica gets its
// own with --service-node), with mTLS files from certDir, the readiness listener and the
// metrics listener on every interface of the pod.
func (p podBootstrap) yaml() ([]byte, error) {
	b, err := bootstrap.Build(bootstrap.Options{
		Gateway:    p.gateway,
		XDSAddress: p.xdsAddress,
		XDSPort:    p.xdsPort,
		AdminPort:  p.adminPort,
		TLS: &bootstrap.XDSClientTLS{
			CertFile: path.Join(p.certDir, xdscerts.CertKey),
			KeyFile:  path.Join(p.certDir, xdscerts.KeyKey),
			CAFile:   path.Join(p.certDir, xdscerts.BundleKey),
			SNI:      p.serverName,
		},
		ReadinessPort:  p.readinessPort,
		MetricsPort:    p.metricsPort,
		MetricsAddress: "0.0.0.0",
	})
	if err != nil {
		return nil, err
	}
	js, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("marshal bootstrap: %w", err)
	}
	return yaml.JSONToYAML(js)
}
