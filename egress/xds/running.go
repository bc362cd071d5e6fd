package xds

// Running lists the versions the connected Envoys of the Gateway have accepted, over
// every type they must run (listeners, clusters and each type the snapshot holds). An
// Envoy in the middle of an update runs two versions at once (say clusters of the new,
// listeners of the old), so both are listed: a caller asking "is X in force" must find
// X in each. all is false when no Envoy is connected or one has not accepted every type
// yet.
//
// The versions listed are Gateway versions (Version and its predecessors), not type
// versions: an Envoy that accepted the published version of each type runs Version,
// even though an unchanged type's version is an older one. A type version an Envoy
// runs otherwise stands for the latest published Gateway version that carried it (the
// version that type had just before the update the Envoy is in the middle of).
func (s GatewayStatus) Running() (versions []string, all bool) {
	if len(s.Envoys) == 0 {
		return nil, false
	}
	seen := map[string]bool{}
	add := func(v string) {
		if !seen[v] {
			seen[v] = true
			versions = append(versions, v)
		}
	}
	all = true
	required := s.requiredTypes()
	for _, e := range s.Envoys {
		if s.runsPublished(e, required) {
			add(s.Version)
			continue
		}
		for _, typeURL := range required {
			v := e.Types[typeURL].Acked
			if v == "" {
				all = false
				continue
			}
			add(s.gatewayVersionOf(typeURL, v))
		}
	}
	return versions, all
}

// runsPublished tells whether e accepted the published version of every required type.
func (s GatewayStatus) runsPublished(e EnvoyStatus, required []string) bool {
	if s.Version == "" {
		return false
	}
	for _, typeURL := range required {
		if e.Types[typeURL].Acked != s.TypeVersion(typeURL) {
			return false
		}
	}
	return true
}

// gatewayVersionOf is the latest published Gateway version whose typeURL had version v;
// v itself when none remembered has (a version from before the server started, or
// older than the history).
func (s GatewayStatus) gatewayVersionOf(typeURL, v string) string {
	for i := len(s.history) - 1; i >= 0; i-- {
		if s.history[i].types[typeURL] == v {
			return s.history[i].version
		}
	}
	return v
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
