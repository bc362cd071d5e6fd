package controllers

import (
	"context"
	"testing"

	"github.com/go-logr/logr"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/xds"
)

// TestCallersPublishWakesTheReconciler: the pod path publishes outside a reconcile, and
// the xDS server's notice of a publish wakes nothing (newsOnly), so reconcileCallers
// wakes the reconciler itself when it published, and only then.
func TestCallersPublishWakesTheReconciler(t *testing.T) {
	r := &Reconciler{
		pods: newPodIndex(), opts: Options{XDS: xds.New(logr.Discard())}, log: logr.Discard(),
		lastPublished: map[string]ir.Gateway{"gw/egress": isolationGateway(1)}, callersPublished: make(chan struct{}, 1),
	}
	steps := []struct {
		name string
		pod  string // the running pod's address; its callers change when it does
		wake bool
	}{
		{"a pod starts: the callers change and are published", "10.0.0.1", true},
		{"the same pod again: nothing published", "10.0.0.1", false},
		{"it moves: published again", "10.0.0.2", true},
	}
	for _, step := range steps {
		r.pods.set(indexPod("team-0", "web", "", step.pod))
		if _, err := r.reconcileCallers(context.Background()); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		woken := false
		select {
		case <-r.callersPublished:
			woken = true
		default:
		}
		if woken != step.wake {
			t.Errorf("%s: woke the reconciler %v, want %v", step.name, woken, step.wake)
		}
	}
	if v := r.opts.XDS.Status("gw/egress").Version; v == "" {
		t.Error("nothing was published")
	}
}
