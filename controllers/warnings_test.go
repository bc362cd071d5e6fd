package controllers

import (
	"strings"
	"testing"

	"k8s.io/client-go/tools/record"

	"github.com/portcullis-io/portcullis/egress/translate"
)

func TestWarningsBecomeOneEventEachUntilTheyGoAway(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	r := &Reconciler{recorder: rec}
	w := translate.Warning{Kind: "Backend", Namespace: "apps", Name: "billing", Reason: translate.ReasonIgnoredInlineTLS, Message: "tls.serverName is ignored"}
	steps := []struct {
		name     string
		warnings []translate.Warning
		events   int
	}{
		{name: "a new warning is emitted", warnings: []translate.Warning{w}, events: 1},
		{name: "the same warning on the next reconcile is not repeated", warnings: []translate.Warning{w}, events: 0},
		{name: "a warning that went away emits nothing", warnings: nil, events: 0},
		{name: "a warning that comes back is emitted again", warnings: []translate.Warning{w}, events: 1},
	}
	for _, step := range steps {
		r.emitWarnings(step.warnings)
		if got := len(rec.Events); got != step.events {
			t.Fatalf("%s: %d events, want %d", step.name, got, step.events)
		}
		for i := 0; i < step.events; i++ {
			if e := <-rec.Events; !strings.Contains(e, "Warning IgnoredInlineTLS tls.serverName is ignored") {
				t.Fatalf("%s: event %q", step.name, e)
			}
		}
	}
}
