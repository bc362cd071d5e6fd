package testenv

import (
	"sync"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
)

// LogBuffer collects every log line at any verbosity, so a test can prove what is, and
// what is not (a private key, say), logged.
type LogBuffer struct {
	mu    sync.Mutex
	lines []string
}

// Logger returns a logger writing into the buffer.
func (b *LogBuffer) Logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

// Lines returns the lines logged so far.
func (b *LogBuffer) Lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.lines...)
}
