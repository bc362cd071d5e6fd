package main

import "k8s.io/client-go/rest"

// withoutClientThrottle returns cfg with client-go's client-side rate limiter turned off
// when cfg leaves it unset, as ctrl.GetConfig does for a kubeconfig or the in-cluster
// config: the API server's priority and fairness is what limits the manager.
//
// `portcullis local` builds its config from the kubeconfig it writes, and a QPS of 0
// there means client-go's default of 5 requests a second (burst 10). The status writer
// then wrote at most five statuses a second: with `make run`'s demo, 200 Backends and
// HTTPRoutes applied at once were all Programmed 69 s after the apply, against 0.23 s
// unthrottled. A QPS the caller set is kept.
func withoutClientThrottle(cfg *rest.Config) *rest.Config {
	if cfg.QPS != 0 || cfg.RateLimiter != nil {
		return cfg
	}
	out := rest.CopyConfig(cfg)
	out.QPS = -1
	return out
}
