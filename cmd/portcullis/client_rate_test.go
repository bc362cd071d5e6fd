package main

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// The REST client client-go builds from the config is what throttles, so the tests ask
// it, not the config's fields.
func restClientLimiter(t *testing.T, cfg *rest.Config) flowcontrol.RateLimiter {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		t.Fatal(err)
	}
	return rc.GetRateLimiter()
}

func TestManagerClientIsNotThrottledByDefault(t *testing.T) {
	local := &rest.Config{Host: "https://127.0.0.1:6443"} // as `portcullis local` builds it: QPS unset
	if restClientLimiter(t, local) == nil {
		t.Fatal("client-go no longer throttles a config without QPS; withoutClientThrottle may go")
	}
	if l := restClientLimiter(t, withoutClientThrottle(local)); l != nil {
		t.Errorf("the manager's client is throttled at %v requests a second", l.QPS())
	}
	if local.QPS != 0 {
		t.Errorf("the caller's config was modified: QPS %v", local.QPS)
	}
}

func TestManagerClientKeepsAQPSTheCallerSet(t *testing.T) {
	set := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 100}
	l := restClientLimiter(t, withoutClientThrottle(set))
	if l == nil || l.QPS() != 50 {
		t.Errorf("limiter %v, want the caller's 50 requests a second", l)
	}
}
