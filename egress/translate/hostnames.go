package translate

import "strings"

// intersectHostnames returns the Host domains a route serves on a listener, following
// Gateway API: with no hostname on either side everything matches; a wildcard matches
// one or more labels; where both match, the more specific name is served.
func intersectHostnames(listener string, route []string) []string {
	switch {
	case listener == "" && len(route) == 0:
		return []string{"*"}
	case listener == "":
		return route
	case len(route) == 0:
		return []string{listener}
	}
	var out []string
	seen := map[string]bool{}
	for _, r := range route {
		if h, ok := hostnameMatch(listener, r); ok && !seen[h] {
			seen[h] = true
			out = append(out, h)
		}
	}
	return out
}

// hostnameMatch reports whether two hostnames overlap and returns the narrower one.
func hostnameMatch(a, b string) (string, bool) {
	switch {
	case a == b:
		return a, true
	case covers(a, b):
		return b, true
	case covers(b, a):
		return a, true
	}
	return "", false
}

// covers reports whether wildcard pattern w ("*.example.com") matches name n, which may
// itself be a narrower wildcard.
func covers(w, n string) bool {
	if !strings.HasPrefix(w, "*.") {
		return false
	}
	suffix := w[1:] // ".example.com"
	return strings.HasSuffix(n, suffix) && len(n) > len(suffix)
}
