// Package golden compares test output with checked-in golden files. Run a test binary
// with -update to rewrite them from the current output, then review the diff like code.
package golden

import (
	"bytes"
	"flag"
	"os"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files from the current output")

// Compare fails t when got differs from the file at path, or rewrites the file under -update.
func Compare(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run the test with -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Errorf("output differs from %s (rerun with -update and review the diff); got:\n%s", path, got)
	}
}
