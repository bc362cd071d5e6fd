package xds

// Applying tells whether an Envoy of the Gateway is still applying something this
// server sent it (a response it has neither accepted nor rejected yet) while none has
// rejected anything. Envoy answers each type of a change on its own, the fast ones
// (clusters) first and a large route table last, so a change is acknowledged in
// several steps: the reconciler waits for the last before it looks at what Envoy runs
// (controllers/xds_wakes.go). A rejection is news at once.
func (s *Server) Applying(gateway string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.gateways[gateway]
	if g == nil {
		return false
	}
	applying := false
	for _, st := range g.streams {
		for _, t := range st.types {
			if t.Nack != nil {
				return false
			}
			applying = applying || !t.answered()
		}
	}
	return applying
}
