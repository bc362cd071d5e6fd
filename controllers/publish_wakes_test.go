package controllers

import (
	"fmt"
	"testing"
	"time"

	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
)

// TestAPublishWakesNoSecondReconcile edits a Backend three times on a running manager
// whose Gateway no Envoy serves, and counts the reconciles that reused a translation:
// none may follow, since only the xDS server's notice of the reconciler's own publish
// could wake one (xds_wakes.go newsOnly). Each edit must still be published (the
// clusters' version moves) and translated (a translation is counted).
func TestAPublishWakesNoSecondReconcile(t *testing.T) {
	const ns = "publish-wakes"
	w, reg := apiBackendWorld(t, ns, "api.publish-wakes.test")
	count := func(how string) func() float64 {
		return func() float64 {
			return max(metricValue(t, reg, metricReconciles, map[string]string{"translation": how}), 0) // -1: none yet
		}
	}
	translations := func() float64 { return count(translationDelta)() + count(translationFull)() }
	reused := settledCount(t, count(translationReused))
	for i := range 3 {
		before, version := translations(), w.xds.Status(ns+"/egress").TypeVersion(resource.ClusterType)
		if err := editServerName(w.c, ns, fmt.Sprintf("v%d.publish-wakes.test", i)); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for translations() == before || w.xds.Status(ns+"/egress").TypeVersion(resource.ClusterType) == version {
			if time.Now().After(deadline) {
				t.Fatalf("edit %d: neither translated nor published within 10 s", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if n := settledCount(t, count(translationReused)) - reused; n != 0 {
		t.Errorf("%v reconciles reused the translation after three edits; want none (a publish is no news to the reconciler)", n)
	}
}
