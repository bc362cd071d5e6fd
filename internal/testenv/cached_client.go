package testenv

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// CachedClient is a client of the API server that reads through an informer cache with
// opts, as a manager's GetClient does; the cache runs until ctx ends. Tests use it to
// check what a component sees, and costs, behind the manager's cache options.
func (a *APIServer) CachedClient(ctx context.Context, opts cache.Options) (client.Client, error) {
	opts.Scheme = a.Scheme
	informers, err := cache.New(a.Config, opts)
	if err != nil {
		return nil, err
	}
	go func() { _ = informers.Start(ctx) }()
	return client.New(a.Config, client.Options{Scheme: a.Scheme, Cache: &client.CacheOptions{Reader: informers}})
}
