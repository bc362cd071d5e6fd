package main

import (
	"fmt"
	"strings"
)

// renderRouteChange is the section of BenchmarkOneRouteChanged: one HTTPRoute edited
// among N, translated (a route delta), built and published. No target states it; it is
// here because a route's change rebuilds the one route table holding it, which the
// Backend rows never do.
func renderRouteChange(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	rs = byBackends(rs)
	b.WriteString("### One HTTPRoute changed\n\nBenchmarkOneRouteChanged: one route's path match edited among N " +
		"(all in one namespace, so in one route table); translate, build and publish with warm caches.\n\n")
	b.WriteString("| Backends + routes | ms | translate ms | build ms | publish ms | MB allocated | deltas |\n" +
		"| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		_, n := sizeOf(r.Name)
		v := r.Values
		fmt.Fprintf(b, "| %d | %s | %s | %s | %s | %.1f | %.2f |\n", n, ms(v["ns/op"]), ms(v["translate-ns/op"]),
			ms(v["build-ns/op"]), ms(v["publish-ns/op"]), v["B/op"]/1e6, v["deltas/op"])
	}
	b.WriteString("\n")
}
