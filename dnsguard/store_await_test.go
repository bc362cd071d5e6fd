package dnsguard

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// TestAwaitFirstAnswers: SetNames says which names it began to track; waiting for them
// returns as soon as they are answered (a name already tracked is not waited for), and
// gives up after its bound when the DNS server never answers, the names still Pending.
func TestAwaitFirstAnswers(t *testing.T) {
	srv := dnstest.NewServer(t)
	srv.Set("old.example.com", "old.example.com. 60 IN A 93.184.216.34")
	srv.Set("new.example.com", "new.example.com. 60 IN A 93.184.216.35")
	cfg := testConfig(srv.Addr())
	s := NewStore(newTestResolver(t, cfg), cfg, StoreOptions{Workers: 2})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = s.Run(ctx) }()

	if added := s.SetNames([]string{"Old.Example.com."}); !slices.Equal(added, []string{"old.example.com"}) {
		t.Fatalf("SetNames added %v, want the normalized new name", added)
	}
	if !s.AwaitFirstAnswers(ctx, []string{"old.example.com"}, 5*time.Second) {
		t.Fatal("the first answer did not come")
	}
	added := s.SetNames([]string{"old.example.com", "new.example.com"})
	if !slices.Equal(added, []string{"new.example.com"}) {
		t.Fatalf("SetNames added %v, want only new.example.com", added)
	}
	if !s.AwaitFirstAnswers(ctx, added, 5*time.Second) {
		t.Fatal("the new name's first answer did not come")
	}
	if r := s.Addresses()["new.example.com"]; r.State != egress.ResolutionResolved || len(r.Vetted) != 1 {
		t.Fatalf("after the wait: %+v, want resolved with its address", r)
	}

	silent := NewStore(newTestResolver(t, testConfig(dnstest.NewBlackhole(t))), cfg, StoreOptions{Workers: 1})
	go func() { _ = silent.Run(ctx) }()
	added = silent.SetNames([]string{"quiet.example.com"})
	start := time.Now()
	if silent.AwaitFirstAnswers(ctx, added, 100*time.Millisecond) {
		t.Fatal("a name a silent server never answered counted as answered")
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Errorf("waited %v, want about the 100ms bound", d)
	}
	if r := silent.Addresses()["quiet.example.com"]; r.State != egress.ResolutionPending {
		t.Errorf("after giving up: %s, want still Pending", r.State)
	}
}
