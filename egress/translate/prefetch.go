package translate

import (
	"runtime"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
)

// minPrefetch is the number of certificate checks below which prefetching is not worth
// starting goroutines for.
const minPrefetch = 64

// prefetch starts parsing, on the CPUs translation leaves free, the client key pairs and
// CA bundles named by the Backends the Cache holds no translation of, and returns a
// function that stops it. Translation itself runs on one goroutine; without this, a
// cold start with thousands of mutual-TLS Backends parses their keys one after the
// other. The workers take the jobs from the end while translation goes from the start,
// so they rarely parse the same thing twice. Prefetching only fills the Cache:
// translation finds there the answers it would compute, and anything prefetched in
// vain is swept as unused.
//
// When the Cache holds at least as many Backend translations as there are Backends,
// nearly all of them are there: a few new ones are not worth a check of every Backend.
func (t *translator) prefetch(backends []*egressv1alpha1.Backend) (stop func()) {
	workers := runtime.GOMAXPROCS(0) - 1
	var jobs []func()
	if workers > 0 && t.cache.backendCount() < len(backends) {
		for i := range backends {
			if t.cache.backend(nameOf(backends[i]), t.epoch) == nil {
				jobs = t.certificateJobs(backends[i], jobs)
			}
		}
	}
	if len(jobs) < minPrefetch {
		return func() {}
	}
	var left atomic.Int64
	left.Store(int64(len(jobs)))
	var stopped atomic.Bool
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for !stopped.Load() {
				i := left.Add(-1)
				if i < 0 {
					return
				}
				jobs[i]()
			}
		})
	}
	return func() {
		stopped.Store(true)
		wg.Wait()
	}
}

// certificateJobs appends a check for each certificate the Backend's inline TLS names.
func (t *translator) certificateJobs(b *egressv1alpha1.Backend, jobs []func()) []func() {
	spec := destinationOf(b).tls
	if spec == nil {
		return jobs
	}
	if ref := spec.ClientCertificate; ref != nil {
		name := types.NamespacedName{Namespace: b.Namespace, Name: ref.SecretRef.Name}
		key := certKey(ref)
		if key == "" {
			key = corev1.TLSCertKey
		}
		cert, pk := t.lookup("Secret", name, key), t.lookup("Secret", name, corev1.TLSPrivateKeyKey)
		if len(cert.value) > 0 && len(pk.value) > 0 {
			jobs = append(jobs, func() { t.cache.keyPair(t.epoch, cert.value, pk.value) })
		}
	}
	for i := range spec.CACertificates {
		ref := &spec.CACertificates[i]
		kind, key := "Secret", certKey(ref)
		if ref.SecretRef.Kind != nil && *ref.SecretRef.Kind == "ConfigMap" {
			kind = "ConfigMap"
		}
		if key == "" {
			key = "ca.crt"
		}
		if v := t.lookup(kind, types.NamespacedName{Namespace: b.Namespace, Name: ref.SecretRef.Name}, key); v.has {
			jobs = append(jobs, func() { t.cache.caBundle(t.epoch, v.value) })
		}
	}
	return jobs
}
