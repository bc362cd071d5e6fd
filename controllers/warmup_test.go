package controllers

import (
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/egress"
)

func TestWarmingHoldsOnlyTheFirstPublication(t *testing.T) {
	pending := egress.Addresses{"api.example.com": {State: egress.ResolutionPending}}
	resolved := egress.Addresses{"api.example.com": {State: egress.ResolutionResolved}}
	tests := []struct {
		name    string
		started time.Duration // how long ago the replica started; 0: not yet
		warm    bool
		addrs   egress.Addresses
		want    bool
	}{
		{name: "a name without an answer holds a starting replica", addrs: pending, want: true},
		{name: "every name answered: publish", addrs: resolved, want: false},
		{name: "no outside name: publish", addrs: egress.Addresses{}, want: false},
		{name: "patience spent: publish what there is", started: WarmupPatience + time.Second, addrs: pending, want: false},
		{name: "once published, a new pending name holds nothing", warm: true, addrs: pending, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{warm: tt.warm}
			if tt.started > 0 {
				r.started = time.Now().Add(-tt.started)
			}
			if got := r.warming(tt.addrs); got != tt.want {
				t.Fatalf("warming = %v, want %v", got, tt.want)
			}
			if !tt.want && !r.warm {
				t.Fatal("a replica that published is not marked warm")
			}
		})
	}
}
