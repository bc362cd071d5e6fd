package testenv

import (
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// XBackendCRD returns the opt-in kustomize component's copy of the Gateway API's
// experimental XBackend CRD (config/components/xbackend): StartAPIServer does not
// install it, as a cluster does not have it unless asked for.
func XBackendCRD() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "components", "xbackend", "gateway.networking.x-k8s.io_xbackends.yaml"), nil
}

// InstallXBackendCRD installs the XBackend CRD into the API server and waits until it is
// served; the returned function uninstalls it.
func (a *APIServer) InstallXBackendCRD() (uninstall func() error, err error) {
	path, err := XBackendCRD()
	if err != nil {
		return nil, err
	}
	opts := envtest.CRDInstallOptions{Paths: []string{path}, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(a.Config, opts); err != nil {
		return nil, err
	}
	return func() error { return envtest.UninstallCRDs(a.Config, opts) }, nil
}
