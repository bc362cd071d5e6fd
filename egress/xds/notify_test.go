package xds

import (
	"context"
	"testing"
	"time"
)

func TestChangesAreCoalescedAndNeverBlock(t *testing.T) {
	n := newNotifier()
	// Nobody receives yet: marking must return at once, however often.
	for range 1000 {
		n.mark("team-a/egress")
		n.mark("team-b/egress")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go n.run(ctx)

	for _, want := range []string{"team-a/egress", "team-b/egress"} {
		select {
		case got := <-n.out:
			if got != want {
				t.Fatalf("got %q, want %q (one name per Gateway, in marking order)", got, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no notification for %q", want)
		}
	}
	select {
	case got := <-n.out:
		t.Fatalf("got %q again although it was not marked again", got)
	case <-time.After(100 * time.Millisecond):
	}

	n.mark("team-a/egress")
	select {
	case got := <-n.out:
		if got != "team-a/egress" {
			t.Fatalf("got %q after a new mark, want team-a/egress", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("a mark after delivery was lost")
	}
}
