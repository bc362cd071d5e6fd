package main

import (
	"fmt"
	"strings"
)

// tunnelRatioTarget is the forward proxy's throughput target: a CONNECT tunnel through
// one Envoy worker against a direct connection to the same source.
const tunnelRatioTarget = 0.9

// renderTunnelSummary judges the target (tunnel / direct) and says beside it
// how the tunnel compares with a relay that only copies, the floor of any proxy that
// is not zero-copy.
func renderTunnelSummary(b *strings.Builder, rs []result) {
	for _, r := range rs {
		v := r.Values
		fmt.Fprintf(b, "| CONNECT tunnel throughput, one Envoy worker, vs a direct connection | ≥ %.1f | %.0f MB/s vs %.0f MB/s: %.3f (sustained %.3f; vs a relay that only copies: %.3f) | %s |\n",
			tunnelRatioTarget, v["tunnel-MB/s"], v["direct-MB/s"], v["ratio"], v["sustained-ratio"], v["tunnel-vs-copy-relay"], met(v["ratio"] >= tunnelRatioTarget))
	}
}

func renderTunnel(b *strings.Builder, rs []result) {
	if len(rs) == 0 {
		return
	}
	b.WriteString("## 9. CONNECT tunnels\n\nBenchmarkConnectTunnel: a forward-proxy Gateway as the translator generates it (one Envoy worker) " +
		"and a Backend declaring a local source's TCP port; 64 MiB read through a CONNECT tunnel and over a direct connection to the same source, " +
		"the sides alternating, each timed from opening the connection to its last byte (median of the rounds), every side reading through the same 256 KiB buffer. " +
		"Sustained: the same with 256 MiB, and through a relay that only copies each connection's bytes through a 256 KiB user-space buffer " +
		"(what any proxy that is not zero-copy costs at least: two more copies through the kernel per byte than a direct connection). " +
		"The end of file comes after the last byte by Envoy's delayed close of a proxy listener (100 ms). Setup: dialling the proxy to reading its 200, a new connection each time. " +
		"TCPRoute: the 64 MiB transfer through a TCP listener and a TCPRoute to the same Backend (Envoy's TCP proxy, no HTTP codec).\n\n")
	b.WriteString("| tunnel MB/s | direct MB/s | ratio | sustained tunnel MB/s | sustained direct MB/s | sustained ratio | copy relay MB/s | tunnel / copy relay | TCPRoute MB/s | TCPRoute ratio | end of file after the last byte, ms | setup p50 ms | setup p99 ms |\n" +
		"| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, r := range rs {
		v := r.Values
		fmt.Fprintf(b, "| %.0f | %.0f | %.3f | %.0f | %.0f | %.3f | %.0f | %.3f | %.0f | %.3f | %.0f | %.2f | %.2f |\n", v["tunnel-MB/s"], v["direct-MB/s"], v["ratio"],
			v["sustained-tunnel-MB/s"], v["sustained-direct-MB/s"], v["sustained-ratio"], v["copy-relay-MB/s"], v["tunnel-vs-copy-relay"],
			v["tcproute-MB/s"], v["tcproute-ratio"], v["eof-after-last-byte-ms"], v["setup-p50-ms"], v["setup-p99-ms"])
	}
	b.WriteString("\n")
}
