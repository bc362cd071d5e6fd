package main

import (
	"fmt"
	"strings"
)

// renderDelta is the section of BenchmarkDeltaOneBackendChanged: the translation of one
// change alone, on the hidden-style input, as a delta of the last translation. A share
// of deltas under 1 means some changes ran as full translations, which the times then
// include.
func renderDelta(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	rs = byBackends(rs)
	b.WriteString("### Its translation as a delta\n\nBenchmarkDeltaOneBackendChanged: the same change on FQDN Backends verified against " +
		"the System CAs, every object versioned; translation alone.\n\n")
	b.WriteString("| Backends | translate ms | MB allocated | deltas |\n| ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		_, n := sizeOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %s | %.1f | %.2f |\n", n, ms(v["translate-ns/op"]), v["B/op"]/1e6, v["deltas/op"])
	}
	b.WriteString("\n")
}
