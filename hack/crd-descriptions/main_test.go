package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestJoinDescriptions(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "a paragraph broken over lines becomes one line",
			in:   "  description: |-\n    tls originates TLS\n    to the destination.\n  type: object",
			want: "  description: |-\n    tls originates TLS to the destination.\n  type: object"},
		{name: "paragraphs stay apart",
			in:   "description: |-\n  First\n  one.\n\n  Second\n  one.\ntype: string",
			want: "description: |-\n  First one.\n\n  Second one.\ntype: string"},
		{name: "list items and indented lines keep their own lines",
			in:   "description: |-\n  Types:\n  - a,\n    continued\n  - b\n  1. c\n\n  Example:\n      code line\nx: 1",
			want: "description: |-\n  Types:\n  - a, continued\n  - b\n  1. c\n\n  Example:\n      code line\nx: 1"},
		{name: "a one-line description and other keys are untouched",
			in:   "description: one line\nproperties:\n  a:\n    type: string",
			want: "description: one line\nproperties:\n  a:\n    type: string"},
		{name: "blank lines after the block stay outside it",
			in:   "  description: |-\n    a\n    b\n\nnext: 1",
			want: "  description: |-\n    a b\n\nnext: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := joinDescriptions(tt.in); got != tt.want {
				t.Fatalf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestGeneratedCRDsHaveOneLinePerParagraph: `make manifests` ran this command over the
// committed CRDs, so kubectl explain can wrap their descriptions itself.
func TestGeneratedCRDsHaveOneLinePerParagraph(t *testing.T) {
	paths, err := filepath.Glob("../../config/crd/bases/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no CRDs found: %v", err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := joinDescriptions(string(b)); got != string(b) {
			t.Errorf("%s has descriptions broken mid-paragraph: run make manifests", p)
		}
		if !strings.Contains(string(b), "description: |-") {
			t.Errorf("%s has no block description: the test checks nothing", p)
		}
	}
}
