// Package localenv runs the control plane of `portcullis local` on this machine: etcd
// and kube-apiserver from bin/ as child processes that die with their parent, with
// their data in one directory that survives restarts, a fresh PKI and an admin
// kubeconfig on every start, and the embedded CRDs installed.
package localenv

import "path/filepath"

// Layout names the files and directories inside the data directory.
type Layout struct{ Root string }

// Etcd is etcd's data directory, kept between runs unless reset.
func (l Layout) Etcd() string { return filepath.Join(l.Root, "etcd") }

// PKI holds the API server's certificates and keys, made anew on every start.
func (l Layout) PKI() string { return filepath.Join(l.Root, "pki") }

// Logs holds one log file per process (etcd.log, kube-apiserver.log, manager.log).
func (l Layout) Logs() string { return filepath.Join(l.Root, "logs") }

// Log is the log file of one component.
func (l Layout) Log(name string) string { return filepath.Join(l.Logs(), name+".log") }

// Envoy is the host provider's work directory: one directory per Gateway.
func (l Layout) Envoy() string { return filepath.Join(l.Root, "envoy") }

// Kubeconfig is the admin kubeconfig written at every start.
func (l Layout) Kubeconfig() string { return filepath.Join(l.Root, "kubeconfig") }

// LockFile is held (flock) while a `portcullis local` uses the directory; the kernel
// releases it when the process dies, so a stale lock file never blocks a new run.
func (l Layout) LockFile() string { return filepath.Join(l.Root, "local.lock") }

// PIDFile holds the process ID of the `portcullis local` that holds the lock, to name
// it in the error of a second run.
func (l Layout) PIDFile() string { return filepath.Join(l.Root, "local.pid") }

// generated are the entries a reset removes: everything but the lock file.
func (l Layout) generated() []string {
	return []string{l.Etcd(), l.PKI(), l.Logs(), l.Envoy(), l.Kubeconfig(), l.PIDFile()}
}
