package localenv

import (
	"path/filepath"
	"strings"
)

// ownedSubdirs are the data directory's entries that a child process names in its
// arguments: etcd's data, the API server's certificates, the Envoy bootstraps.
var ownedSubdirs = []string{"etcd", "pki", "envoy"}

// OwnedBy reports whether a process with these arguments was started for the data
// directory root: one argument (or the value of a --flag=value argument) lies inside
// root's etcd, pki or envoy directory. A shell or a `portcullis local` that merely
// names root is not matched, so a leftover sweep never stops its own parent.
func OwnedBy(root string, args []string) bool {
	root = filepath.Clean(root)
	for _, arg := range args[min(1, len(args)):] {
		if _, value, ok := strings.Cut(arg, "="); ok && strings.HasPrefix(arg, "-") {
			arg = value
		}
		for _, sub := range ownedSubdirs {
			dir := filepath.Join(root, sub)
			if arg == dir || strings.HasPrefix(arg, dir+string(filepath.Separator)) {
				return true
			}
		}
	}
	return false
}
