package xds

// Answered tells whether every connected Envoy has answered (accepted or rejected)
// every response sent to it: no Envoy of any Gateway is still applying something this
// server sent. The manager's idle collector asks it (controllers/idle_gc.go): a manager
// with nothing to reconcile is not idle for the machine while an Envoy beside it applies
// the route table it was just sent, and a collection of its heap then competes with that
// Envoy for the CPUs.
func (s *Server) Answered() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.gateways {
		for _, st := range g.streams {
			for _, t := range st.types {
				if !t.answered() {
					return false
				}
			}
		}
	}
	return true
}

// answered: on an incremental stream, no response waits for its ACK or NACK; on a
// state-of-the-world one, the last version sent was accepted or rejected.
func (t *typeState) answered() bool {
	if t.delta != nil {
		return len(t.delta.inFlight) == 0
	}
	return t.Sent == "" || t.Sent == t.Acked || (t.Nack != nil && t.Nack.Version == t.Sent)
}
