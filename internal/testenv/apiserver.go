package testenv

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// APIServer is a running kube-apiserver and etcd with the Portcullis CRDs installed.
type APIServer struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client
	Scheme *runtime.Scheme
}

// AssetsDir returns where kube-apiserver and etcd live: $KUBEBUILDER_ASSETS, else the
// repo's bin/k8s, or an error saying how to build them.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin", "k8s")
	}
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if _, err := executable(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s not found in %s: %w", name, dir, err)
		}
	}
	return dir, nil
}

// Scheme returns a scheme with the Kubernetes built-in types and the Portcullis API.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := egressv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := gwapiv1.Install(s); err != nil {
		panic(err)
	}
	if err := gwapixv1alpha1.Install(s); err != nil {
		panic(err)
	}
	return s
}

// StartAPIServer starts etcd and kube-apiserver with our CRDs (config/crd/bases) and the
// Gateway API standard CRDs (config/crd/gateway-api). It
// returns an error instead of failing a test so TestMain can call it; callers decide
// whether a missing binary fails (CI) or skips.
func StartAPIServer() (*APIServer, error) {
	assets, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases"), filepath.Join(root, "config", "crd", "gateway-api")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	scheme := Scheme()
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &APIServer{Env: env, Config: cfg, Client: c, Scheme: scheme}, nil
}

// Stop stops the API server and etcd.
func (a *APIServer) Stop() error { return a.Env.Stop() }

// Kubeconfig writes an admin kubeconfig for the API server into dir and returns its path.
func (a *APIServer) Kubeconfig(dir string) (string, error) {
	user, err := a.Env.AddUser(envtest.User{Name: "portcullis-test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	return path, os.WriteFile(path, data, 0o600)
}
