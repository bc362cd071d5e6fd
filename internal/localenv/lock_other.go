//go:build !unix

package localenv

import "os"

// lockFile only opens the file where flock does not exist: one run per data directory
// is then the user's business.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
}
