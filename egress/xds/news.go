package xds

// News tells the status changes the publisher made from those it did not. Every change
// of a Gateway's status is noticed on Changes, and so is every Publish: its version is
// the status's. The reconciler that publishes reads the status after publishing, so the
// notice of its own publish told it nothing, yet woke a whole reconcile to find that out
// (at 10,000 Backends one for every change, as costly as the change's own). What it
// must wake for is what Envoy did (connected, left, accepted, rejected), a Gateway
// removed and a resend (the server's version moves without new content): each of those
// adds one to News before its notice goes out.

// News counts the status changes of every Gateway that no Publish made: an Envoy
// connected or disconnected, acknowledged or rejected a configuration, a Gateway's
// snapshot was removed or resent. A notice on Changes that comes with News unchanged
// since the last notice let through was a publish's only.
func (s *Server) News() uint64 { return s.news.Load() }

// markNews counts a change that is news (News) and notices it, in that order: whoever
// the notice wakes reads the new count.
func (s *Server) markNews(gateway string) {
	s.news.Add(1)
	s.changes.mark(gateway)
}
