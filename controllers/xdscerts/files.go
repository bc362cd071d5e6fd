package xdscerts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// HostServerName is the DNS name of the xDS server's certificate on a host, which the
// host's Envoys send as SNI and verify.
const HostServerName = "localhost"

// envoyClientsDir is the directory, under a file store's root, holding one directory
// per namespace with the client certificate of that namespace's Envoys.
const envoyClientsDir = "envoy-clients"

// ClientFiles are the paths of an Envoy client certificate kept in files: what an
// Envoy bootstrap names.
type ClientFiles struct {
	Cert, Key, CA string
}

// NewFiles returns a Manager that keeps the CA, the server certificate and the Envoy
// client certificates in files under dir instead of Secrets: on a host, where the xDS
// server, the manager and the Envoys are processes of one user. Directories are 0700 and
// files 0600, so other users of the machine cannot read the keys. opts.Namespace may
// be empty (no client certificate is made for the manager's own namespace);
// opts.ServiceNames defaults to HostServerName.
func NewFiles(dir string, opts Options) (*Manager, error) {
	if dir == "" {
		return nil, errors.New("xdscerts: no directory for the certificate files")
	}
	if len(opts.ServiceNames) == 0 {
		opts.ServiceNames = []string{HostServerName}
	}
	return withStore(fileStore{root: dir, mu: &sync.Mutex{}}, opts)
}

// ClientFiles returns where EnsureClientSecret keeps the client certificate of
// namespace when the Manager keeps files (NewFiles).
func (m *Manager) ClientFiles(namespace string) (ClientFiles, error) {
	files, ok := m.store.(fileStore)
	if !ok {
		return ClientFiles{}, errors.New("xdscerts: the certificates are kept in Secrets, not files")
	}
	dir := files.dir(types.NamespacedName{Namespace: namespace, Name: EnvoyClientSecretName})
	return ClientFiles{Cert: filepath.Join(dir, CertKey), Key: filepath.Join(dir, KeyKey), CA: filepath.Join(dir, BundleKey)}, nil
}

// fileStore keeps each Secret as a directory of its data keys (tls.crt, tls.key,
// ca.crt): the manager's own under root/<name>, the Envoy client ones under
// root/envoy-clients/<namespace>. Labels and owners are not kept.
type fileStore struct {
	root string
	// mu serialises syncs: two Gateways of one namespace starting at once must not
	// write one's certificate beside the other's key.
	mu *sync.Mutex
}

func (f fileStore) dir(key types.NamespacedName) string {
	if key.Name == EnvoyClientSecretName {
		return filepath.Join(f.root, envoyClientsDir, key.Namespace)
	}
	return filepath.Join(f.root, key.Name)
}

// sync reads the files, lets mutate decide and rewrites them when it changed the data.
// Each file is replaced by a rename, so a reader never sees half a file.
func (f fileStore) sync(_ context.Context, key types.NamespacedName, mutate mutateFunc) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	dir := f.dir(key)
	s := &corev1.Secret{Data: map[string][]byte{}}
	s.Name, s.Namespace = key.Name, key.Namespace
	for _, k := range []string{CertKey, KeyKey, BundleKey} {
		data, err := os.ReadFile(filepath.Join(dir, k))
		switch {
		case err == nil:
			s.Data[k] = data
		case !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("certificate files %s: %w", dir, err)
		}
	}
	before := maps.Clone(s.Data)
	if _, err := mutate(s); err != nil {
		return fmt.Errorf("certificate files %s: %w", dir, err)
	}
	if maps.EqualFunc(before, s.Data, bytes.Equal) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("certificate files: %w", err)
	}
	for _, k := range slices.Sorted(maps.Keys(s.Data)) {
		if err := writeFileAtomic(filepath.Join(dir, k), s.Data[k]); err != nil {
			return fmt.Errorf("certificate files %s: %w", dir, err)
		}
	}
	return nil
}

func (f fileStore) envoyClientNamespaces(context.Context) ([]string, error) {
	entries, err := os.ReadDir(filepath.Join(f.root, envoyClientsDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("certificate files: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// writeFileAtomic writes data to a temporary file of mode 0600 beside path and renames
// it over path.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
