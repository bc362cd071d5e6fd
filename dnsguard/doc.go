// Package dnsguard is Portcullis's DNS trust guard: the only resolver of outside names.
//
// It decides which names may be resolved (NamePolicy), which answers Envoy may connect
// to (AddressPolicy, which implements egress.AddressPolicy), resolves names with
// github.com/miekg/dns against the configured servers (Resolver), keeps the vetted
// addresses of every tracked name fresh (Store), and reports what it does as
// Prometheus metrics (Metrics). The README's "The DNS trust guard" states the rules.
//
// Wiring, in the manager:
//
//	cfg := dnsguard.DefaultConfig()
//	cfg.RegisterFlags(flag.CommandLine)            // --dns-server, --allow-cidr, ...
//	flag.Parse()
//	metrics, _ := dnsguard.NewDefaultMetrics()     // controller-runtime's registry
//	resolver, err := dnsguard.NewResolver(cfg, metrics)
//	store := dnsguard.NewStore(resolver, cfg, dnsguard.StoreOptions{Metrics: metrics})
//	go store.Run(ctx)
//	store.SetNames(fqdnsOfAllBackends)             // after each gather
//	<-store.Changes(); store.Changed()             // names to re-translate
//	cluster, _ := cfg.ClusterPrefixes()           // Service endpoints outside them are vetted
//	translate.Translate(res, store.Addresses(), translate.Options{AddressPolicy: resolver.AddressPolicy(), ClusterCIDRs: cluster})
//
// Everything fails closed:
//   - A name, or any CNAME target in its chain, that the name policy refuses yields no
//     address (ForbiddenName).
//   - An answer the address policy refuses is dropped and reported with its reason; if
//     none remains the state is AllAddressesForbidden.
//   - Only answer-section records of class IN owned by the name being sought count.
//   - NXDOMAIN, NODATA ("no A/AAAA records", state ResolutionFailed), a CNAME loop or a
//     chain of more than 8 hops drop the vetted set at once: they are answers, not
//     outages. Timeouts, SERVFAIL, REFUSED, network and malformed-answer errors are
//     outages: the last vetted set stays (state Stale) for the stale grace, counted
//     from the first failed refresh, then is dropped (ResolutionFailed).
//   - A vetted set whose TTL plus the stale grace has passed without a successful
//     refresh is never served, even when every worker is stuck on a dead server.
package dnsguard
