// Package bench measures Portcullis against its performance targets (the "target"
// column of results.md): full translation at scale, republishing after one change, propagation from
// the API server to the first 200 through a real Envoy, data-plane overhead against a
// hand-written Envoy configuration, and the DNS guard.
//
// Every benchmark takes its sizes from the environment (BENCH_SIZES and friends, see
// sizes_test.go) with small defaults, so `make test` runs each of them once
// (-benchtime=1x) and they cannot rot; `make bench` runs the big sizes through the
// report program in cmd/report, which writes results.md.
package bench
