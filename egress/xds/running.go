package xds

// Running lists the versions the connected Envoys of the Gateway have accepted, over
// every type they must run (listeners, clusters and each type the snapshot holds). An
// Envoy in the middle of an update runs two versions at once (say clusters of the new,
// listeners of the old), so both are listed: a caller asking "is X in force" must find
// X in each. all is false when no Envoy is connected or one has not accepted every type
// yet.
func (s GatewayStatus) Running() (versions []string, all bool) {
	if len(s.Envoys) == 0 {
		return nil, false
	}
	seen := map[string]bool{}
	all = true
	for _, e := range s.Envoys {
		for _, typeURL := range s.requiredTypes() {
			v := e.Types[typeURL].Acked
			if v == "" {
				all = false
				continue
			}
			if !seen[v] {
				seen[v] = true
				versions = append(versions, v)
			}
		}
	}
	return versions, all
}

// Rejection is Envoy's rejection of the published version, if any: the Envoy, the
// resource kind and Envoy's message.
func (s GatewayStatus) Rejection() (nack *Nack, kindName string) {
	n, typeURL := s.rejection()
	if n == nil {
		return nil, ""
	}
	return n, kind(typeURL)
}
