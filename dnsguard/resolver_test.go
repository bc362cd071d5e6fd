package dnsguard

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/portcullis-io/portcullis/dnsguard/dnstest"
	"github.com/portcullis-io/portcullis/egress"
)

// testConfig is the default config pointed at servers, with short timeouts.
func testConfig(servers ...string) Config {
	cfg := DefaultConfig()
	cfg.DNSServers = servers
	cfg.Timeout = 300 * time.Millisecond
	cfg.Attempts = 1
	cfg.ClusterCIDRs = []string{"10.96.0.0/12"}
	return cfg
}

func newTestResolver(t testing.TB, cfg Config) *Resolver {
	t.Helper()
	r, err := NewResolver(cfg, nil)
	if err != nil {
		t.Fatalf("NewResolver: %v", err)
	}
	return r
}

func resolve(t testing.TB, r *Resolver, name string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res := r.Resolve(ctx, name)
	assertNothingForbiddenVetted(t, r, res)
	return res
}

// assertNothingForbiddenVetted is the guard's core promise, checked after every
// resolution in these tests.
func assertNothingForbiddenVetted(t testing.TB, r *Resolver, res Result) {
	t.Helper()
	for _, a := range res.Vetted {
		if ok, reason := r.AddressPolicy().CheckAddr(a); !ok {
			t.Fatalf("%s: vetted %s although the policy refuses it (%s)", res.Name, a, reason)
		}
	}
	if res.State != egress.ResolutionResolved && len(res.Vetted) > 0 {
		t.Fatalf("%s: state %s with vetted addresses %v", res.Name, res.State, res.Vetted)
	}
	if res.State == egress.ResolutionResolved && len(res.Vetted) == 0 {
		t.Fatalf("%s: Resolved without vetted addresses", res.Name)
	}
	for i, c := range res.Chain {
		if ok, reason := r.NamePolicy().CheckName(c); !ok && (res.State != egress.ResolutionForbiddenName || i != len(res.Chain)-1) {
			t.Fatalf("%s: chain name %s is refused (%s) but the state is %s", res.Name, c, reason, res.State)
		}
	}
	if len(res.Vetted) > MaxAddresses || len(res.Blocked) > MaxAddresses {
		t.Fatalf("%s: %d vetted, %d blocked: over the cap of %d", res.Name, len(res.Vetted), len(res.Blocked), MaxAddresses)
	}
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func blockedIPs(b []egress.BlockedAddress) []string {
	var out []string
	for _, x := range b {
		out = append(out, x.IP.String())
	}
	return out
}

// chainRecords returns a CNAME chain of hops ending at an A record.
func chainRecords(prefix string, hops int, final string) []string {
	var out []string
	name := prefix + ".example.com."
	for i := 1; i <= hops; i++ {
		next := fmt.Sprintf("%s-hop%d.example.net.", prefix, i)
		out = append(out, name+" 60 IN CNAME "+next)
		name = next
	}
	return append(out, name+" 60 IN A "+final)
}

type resolveCase struct {
	name        string
	family      IPFamily
	setup       func(s *dnstest.Server)
	query       string
	wantState   egress.ResolutionState
	wantVetted  []netip.Addr
	wantBlocked map[string]string // ip -> reason substring
	wantChain   []string
	wantTTL     time.Duration
	wantMsg     string
	transient   bool
}

func TestResolverScenarios(t *testing.T) {
	tests := []resolveCase{
		{
			name: "public A and AAAA are vetted",
			setup: func(s *dnstest.Server) {
				s.Set("api.example.com", "api.example.com. 60 IN A 93.184.216.34", "api.example.com. 60 IN AAAA 2606:2800:220:1:248:1893:25c8:1946")
			},
			query: "api.example.com", wantState: egress.ResolutionResolved,
			wantVetted: addrs("93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"), wantTTL: 60 * time.Second,
		},
		{
			name: "mixed public and private answers keep only the public ones",
			setup: func(s *dnstest.Server) {
				s.Set("mixed.example.com", "mixed.example.com. 60 IN A 93.184.216.34", "mixed.example.com. 60 IN A 10.0.0.7",
					"mixed.example.com. 60 IN A 169.254.169.254", "mixed.example.com. 60 IN A 10.96.0.10", "mixed.example.com. 60 IN AAAA fd00::1")
			},
			query: "mixed.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"),
			wantBlocked: map[string]string{"10.0.0.7": "private (10.0.0.0/8)", "169.254.169.254": "cloud metadata endpoint", "10.96.0.10": "cluster CIDR (10.96.0.0/12)", "fd00::1": "unique local (fc00::/7)"},
			wantTTL:     60 * time.Second,
		},
		{
			name: "only private answers: AllAddressesForbidden",
			setup: func(s *dnstest.Server) {
				s.Set("internal-only.example.com", "internal-only.example.com. 60 IN A 192.168.1.1")
			},
			query: "internal-only.example.com", wantState: egress.ResolutionAllForbidden,
			wantBlocked: map[string]string{"192.168.1.1": "private (192.168.0.0/16)"}, wantMsg: "all 1 answers refused",
			wantTTL: 60 * time.Second,
		},
		{
			name:  "AAAA ::1 is refused",
			setup: func(s *dnstest.Server) { s.Set("six.example.com", "six.example.com. 60 IN AAAA ::1") },
			query: "six.example.com", wantState: egress.ResolutionAllForbidden,
			wantBlocked: map[string]string{"::1": "loopback (::1/128)"}, wantTTL: 60 * time.Second,
		},
		{
			name:  "AAAA IPv4-mapped private address is refused",
			setup: func(s *dnstest.Server) { s.Set("mapped.example.com", "mapped.example.com. 60 IN AAAA ::ffff:10.0.0.1") },
			query: "mapped.example.com", wantState: egress.ResolutionAllForbidden,
			wantBlocked: map[string]string{"::ffff:10.0.0.1": "IPv4-mapped 10.0.0.1: private"}, wantTTL: 60 * time.Second,
		},
		{
			name: "AAAA NAT64 of the metadata address is refused naming it",
			setup: func(s *dnstest.Server) {
				s.Set("nat64.example.com", "nat64.example.com. 60 IN AAAA 64:ff9b::a9fe:a9fe")
			},
			query: "nat64.example.com", wantState: egress.ResolutionAllForbidden,
			wantBlocked: map[string]string{"64:ff9b::a9fe:a9fe": "embeds 169.254.169.254"}, wantTTL: 60 * time.Second,
		},
		{
			name: "CNAME to a cluster.local name is a forbidden name",
			setup: func(s *dnstest.Server) {
				s.Set("evil.example.com", "evil.example.com. 60 IN CNAME kubernetes.default.svc.cluster.local.", "kubernetes.default.svc.cluster.local. 60 IN A 93.184.216.34")
			},
			query: "evil.example.com", wantState: egress.ResolutionForbiddenName,
			wantChain: []string{"kubernetes.default.svc.cluster.local"},
			wantMsg:   "CNAME target kubernetes.default.svc.cluster.local is refused: under refused suffix .cluster.local",
			wantTTL:   60 * time.Second,
		},
		{
			name: "CNAME to metadata.google.internal is a forbidden name",
			setup: func(s *dnstest.Server) {
				s.Set("meta.example.com", "meta.example.com. 60 IN CNAME metadata.google.internal.")
				s.Set("metadata.google.internal", "metadata.google.internal. 60 IN A 8.8.8.8")
			},
			query: "meta.example.com", wantState: egress.ResolutionForbiddenName,
			wantChain: []string{"metadata.google.internal"},
			wantMsg:   "CNAME target metadata.google.internal is refused: under refused suffix .internal",
			wantTTL:   60 * time.Second,
		},
		{
			name: "CNAME target refused deep in the chain",
			setup: func(s *dnstest.Server) {
				s.Set("deep.example.com", "deep.example.com. 60 IN CNAME a.example.net.", "a.example.net. 60 IN CNAME 10.0.0.1.", "10.0.0.1. 60 IN A 93.184.216.34")
			},
			query: "deep.example.com", wantState: egress.ResolutionForbiddenName,
			wantChain: []string{"a.example.net", "10.0.0.1"}, wantMsg: "CNAME target 10.0.0.1 is refused: IP address literal", wantTTL: 60 * time.Second,
		},
		{
			name: "CNAME loop fails",
			setup: func(s *dnstest.Server) {
				s.Set("loop-a.example.com", "loop-a.example.com. 60 IN CNAME loop-b.example.com.")
				s.Set("loop-b.example.com", "loop-b.example.com. 60 IN CNAME loop-a.example.com.")
			},
			query: "loop-a.example.com", wantState: egress.ResolutionFailed,
			wantChain: []string{"loop-b.example.com"}, wantMsg: "CNAME loop (loop-a.example.com -> loop-b.example.com -> loop-a.example.com)",
			wantTTL: 60 * time.Second,
		},
		{
			name:  "CNAME to itself fails",
			setup: func(s *dnstest.Server) { s.Set("self.example.com", "self.example.com. 60 IN CNAME self.example.com.") },
			query: "self.example.com", wantState: egress.ResolutionFailed, wantMsg: "CNAME loop (self.example.com -> self.example.com)",
			wantTTL:   60 * time.Second,
			wantChain: nil,
		},
		{
			name:  "8-hop chain in one answer resolves",
			setup: func(s *dnstest.Server) { s.Set("eight.example.com", chainRecords("eight", 8, "93.184.216.34")...) },
			query: "eight.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"),
			wantChain:   []string{"eight-hop1.example.net", "eight-hop2.example.net", "eight-hop3.example.net", "eight-hop4.example.net", "eight-hop5.example.net", "eight-hop6.example.net", "eight-hop7.example.net", "eight-hop8.example.net"},
			wantTTL:     60 * time.Second,
			wantMsg:     "",
			wantBlocked: nil,
		},
		{
			name:  "9-hop chain fails",
			setup: func(s *dnstest.Server) { s.Set("nine.example.com", chainRecords("nine", 9, "93.184.216.34")...) },
			query: "nine.example.com", wantState: egress.ResolutionFailed, wantMsg: "CNAME chain longer than 8 hops",
			wantTTL: 60 * time.Second,
			wantChain: []string{"nine-hop1.example.net", "nine-hop2.example.net", "nine-hop3.example.net", "nine-hop4.example.net",
				"nine-hop5.example.net", "nine-hop6.example.net", "nine-hop7.example.net", "nine-hop8.example.net"},
		},
		{
			name: "8-hop chain one hop per answer resolves by asking each target",
			setup: func(s *dnstest.Server) {
				recs := chainRecords("split", 8, "93.184.216.34")
				for _, r := range recs {
					s.Set(strings.Fields(r)[0], r)
				}
			},
			query: "split.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
			wantChain: []string{"split-hop1.example.net", "split-hop2.example.net", "split-hop3.example.net", "split-hop4.example.net", "split-hop5.example.net", "split-hop6.example.net", "split-hop7.example.net", "split-hop8.example.net"},
		},
		{
			name: "9-hop chain one hop per answer fails",
			setup: func(s *dnstest.Server) {
				for _, r := range chainRecords("split9", 9, "93.184.216.34") {
					s.Set(strings.Fields(r)[0], r)
				}
			},
			query: "split9.example.com", wantState: egress.ResolutionFailed, wantMsg: "CNAME chain longer than 8 hops", wantTTL: 60 * time.Second,
			wantChain: []string{"split9-hop1.example.net", "split9-hop2.example.net", "split9-hop3.example.net", "split9-hop4.example.net", "split9-hop5.example.net", "split9-hop6.example.net", "split9-hop7.example.net", "split9-hop8.example.net"},
		},
		{
			name:  "NXDOMAIN",
			setup: func(s *dnstest.Server) {},
			query: "missing.example.com", wantState: egress.ResolutionNXDomain, wantMsg: "missing.example.com does not exist (NXDOMAIN)",
		},
		{
			name: "NXDOMAIN at the end of a CNAME chain names the target",
			setup: func(s *dnstest.Server) {
				s.Script("dangling.example.com", dnstest.Response{Rcode: dns.RcodeNameError, Answer: []string{"dangling.example.com. 60 IN CNAME gone.example.net."}})
			},
			query: "dangling.example.com", wantState: egress.ResolutionNXDomain, wantChain: []string{"gone.example.net"},
			wantMsg: "CNAME target gone.example.net of dangling.example.com does not exist", wantTTL: 60 * time.Second,
		},
		{
			name: "NXDOMAIN with a CNAME to a refused name is a forbidden name",
			setup: func(s *dnstest.Server) {
				s.Script("nxevil.example.com", dnstest.Response{Rcode: dns.RcodeNameError, Answer: []string{"nxevil.example.com. 60 IN CNAME x.svc."}})
			},
			query: "nxevil.example.com", wantState: egress.ResolutionForbiddenName, wantChain: []string{"x.svc"}, wantMsg: "under refused suffix .svc", wantTTL: 60 * time.Second,
		},
		{
			name: "NXDOMAIN with address records vets nothing",
			setup: func(s *dnstest.Server) {
				s.Script("nxaddr.example.com", dnstest.Response{Rcode: dns.RcodeNameError, Answer: []string{"nxaddr.example.com. 60 IN A 93.184.216.34"}})
			},
			query: "nxaddr.example.com", wantState: egress.ResolutionNXDomain,
		},
		{
			name:  "SERVFAIL is a transient failure",
			setup: func(s *dnstest.Server) { s.Script("sf.example.com", dnstest.Response{Rcode: dns.RcodeServerFailure}) },
			query: "sf.example.com", wantState: egress.ResolutionFailed, wantMsg: "SERVFAIL", transient: true,
		},
		{
			name:  "REFUSED is a transient failure",
			setup: func(s *dnstest.Server) { s.Script("refused.example.com", dnstest.Response{Rcode: dns.RcodeRefused}) },
			query: "refused.example.com", wantState: egress.ResolutionFailed, wantMsg: "REFUSED", transient: true,
		},
		{
			name:  "no answer at all is a timeout",
			setup: func(s *dnstest.Server) { s.Script("silent.example.com", dnstest.Response{Drop: true}) },
			query: "silent.example.com", wantState: egress.ResolutionFailed, wantMsg: "timeout", transient: true,
		},
		{
			name:  "NOERROR without records for both families",
			setup: func(s *dnstest.Server) { s.Set("nodata.example.com", "nodata.example.com. 60 IN TXT \"hello\"") },
			query: "nodata.example.com", wantState: egress.ResolutionFailed, wantMsg: "no A/AAAA records",
		},
		{
			name:   "NOERROR without A records, IPv4 only",
			family: IPv4,
			setup:  func(s *dnstest.Server) { s.Set("v6only.example.com", "v6only.example.com. 60 IN AAAA 2606:4700::1") },
			query:  "v6only.example.com", wantState: egress.ResolutionFailed, wantMsg: "no A records",
		},
		{
			name:   "IPv6 family asks AAAA only",
			family: IPv6,
			setup: func(s *dnstest.Server) {
				s.Set("both.example.com", "both.example.com. 60 IN A 93.184.216.34", "both.example.com. 60 IN AAAA 2606:4700::1")
			},
			query: "both.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("2606:4700::1"), wantTTL: 60 * time.Second,
		},
		{
			name: "an answer for a different name is ignored",
			setup: func(s *dnstest.Server) {
				s.Script("asked.example.com", dnstest.Response{Answer: []string{"other.example.com. 60 IN A 93.184.216.34", "example.com. 60 IN A 93.184.216.35"}})
			},
			query: "asked.example.com", wantState: egress.ResolutionFailed, wantMsg: "no A/AAAA records",
		},
		{
			name: "an out-of-bailiwick record beside the real answer is ignored",
			setup: func(s *dnstest.Server) {
				s.Set("bail.example.com", "bail.example.com. 60 IN A 93.184.216.34", "www.bank.example. 60 IN A 6.6.6.6", "bail.example.com.evil.test. 60 IN A 7.7.7.7")
			},
			query: "bail.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
		},
		{
			name: "authority and additional records are ignored",
			setup: func(s *dnstest.Server) {
				s.Script("sections.example.com", dnstest.Response{
					Answer: []string{"sections.example.com. 60 IN A 93.184.216.34"},
					Ns:     []string{"sections.example.com. 60 IN A 6.6.6.6", "example.com. 60 IN NS ns.evil.test."},
					Extra:  []string{"sections.example.com. 60 IN A 7.7.7.7", "sections.example.com. 60 IN AAAA 2606:4700::6666", "ns.evil.test. 60 IN A 10.0.0.1"},
				})
			},
			query: "sections.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
		},
		{
			name: "only authority-section addresses is no data",
			setup: func(s *dnstest.Server) {
				s.Script("nsonly.example.com", dnstest.Response{Ns: []string{"nsonly.example.com. 60 IN A 6.6.6.6"}, Extra: []string{"nsonly.example.com. 60 IN AAAA 2606:4700::6666"}})
			},
			query: "nsonly.example.com", wantState: egress.ResolutionFailed, wantMsg: "no A/AAAA records",
		},
		{
			name: "records of the wrong class or type are ignored",
			setup: func(s *dnstest.Server) {
				s.Script("class.example.com", dnstest.Response{AnyType: true, Answer: []string{
					"class.example.com. 60 CH A 93.184.216.34", "class.example.com. 60 IN AAAA 2606:4700::1", "class.example.com. 60 IN A 93.184.216.35",
				}})
			},
			query: "class.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.35", "2606:4700::1"), wantTTL: 60 * time.Second,
		},
		{
			name:   "A records in an AAAA answer are ignored",
			family: IPv6,
			setup: func(s *dnstest.Server) {
				s.Script("v4in6.example.com", dnstest.Response{AnyType: true, Answer: []string{"v4in6.example.com. 60 IN A 93.184.216.34"}})
			},
			query: "v4in6.example.com", wantState: egress.ResolutionFailed, wantMsg: "no AAAA records",
		},
		{
			name:   "AAAA records in an A answer are ignored",
			family: IPv4,
			setup: func(s *dnstest.Server) {
				s.Script("v6in4.example.com", dnstest.Response{AnyType: true, Answer: []string{"v6in4.example.com. 60 IN AAAA 2606:4700::1"}})
			},
			query: "v6in4.example.com", wantState: egress.ResolutionFailed, wantMsg: "no A records",
		},
		{
			name: "owner names match case-insensitively",
			setup: func(s *dnstest.Server) {
				s.Script("case.example.com", dnstest.Response{Answer: []string{"CASE.Example.COM. 60 IN A 93.184.216.34"}})
			},
			query: "Case.Example.Com.", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
		},
		{
			name: "duplicate records are vetted once",
			setup: func(s *dnstest.Server) {
				s.Script("dup.example.com", dnstest.Response{Answer: []string{"dup.example.com. 60 IN A 93.184.216.34", "dup.example.com. 30 IN A 93.184.216.34"}})
			},
			query: "dup.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 30 * time.Second,
		},
		{
			name: "CNAME and A for the same owner is refused",
			setup: func(s *dnstest.Server) {
				s.Set("both-kinds.example.com", "both-kinds.example.com. 60 IN CNAME x.example.net.", "both-kinds.example.com. 60 IN A 93.184.216.34", "x.example.net. 60 IN A 93.184.216.35")
			},
			// The AAAA walk follows the CNAME (no AAAA beside it) and finds nothing.
			query: "both-kinds.example.com", wantState: egress.ResolutionFailed, wantMsg: "has both a CNAME and A records",
			wantChain: []string{"x.example.net"}, wantTTL: 60 * time.Second,
		},
		{
			name: "two CNAME targets for one owner are refused",
			setup: func(s *dnstest.Server) {
				s.Set("fork.example.com", "fork.example.com. 60 IN CNAME x.example.net.", "fork.example.com. 60 IN CNAME y.example.net.", "x.example.net. 60 IN A 93.184.216.35")
			},
			query: "fork.example.com", wantState: egress.ResolutionFailed, wantMsg: "2 different CNAME targets",
		},
		{
			name: "TTL 0 is raised to the minimum",
			setup: func(s *dnstest.Server) {
				s.Set("ttl0.example.com", "ttl0.example.com. 0 IN A 93.184.216.34")
			},
			query: "ttl0.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 5 * time.Second,
		},
		{
			name: "TTL 2^31 has its top bit set and counts as 0 (RFC 2181)",
			setup: func(s *dnstest.Server) {
				s.Set("ttlbig.example.com", "ttlbig.example.com. 2147483648 IN A 93.184.216.34")
			},
			query: "ttlbig.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 5 * time.Second,
		},
		{
			name: "TTL 2^31-1 is lowered to the maximum",
			setup: func(s *dnstest.Server) {
				s.Set("ttlmax.example.com", "ttlmax.example.com. 2147483647 IN A 93.184.216.34")
			},
			query: "ttlmax.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 300 * time.Second,
		},
		{
			name: "the TTL is the minimum over the chain",
			setup: func(s *dnstest.Server) {
				s.Set("ttlchain.example.com", "ttlchain.example.com. 30 IN CNAME edge.example.net.", "edge.example.net. 120 IN A 93.184.216.34", "edge.example.net. 90 IN AAAA 2606:4700::1")
			},
			query: "ttlchain.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34", "2606:4700::1"),
			wantChain: []string{"edge.example.net"}, wantTTL: 30 * time.Second,
		},
		{
			name: "truncated UDP answer is asked again over TCP",
			setup: func(s *dnstest.Server) {
				s.Script("tc.example.com", dnstest.Response{Truncate: true, Answer: []string{"tc.example.com. 60 IN A 93.184.216.34"}})
			},
			query: "tc.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
		},
		{
			name: "a partial answer still resolves and notes the failed family",
			setup: func(s *dnstest.Server) {
				s.Script("partial.example.com", dnstest.Response{Answer: []string{"partial.example.com. 60 IN A 93.184.216.34"}, Mutate: func(m *dns.Msg) {
					if m.Question[0].Qtype == dns.TypeAAAA {
						m.Rcode = dns.RcodeServerFailure
					}
				}})
			},
			query: "partial.example.com", wantState: egress.ResolutionResolved, wantVetted: addrs("93.184.216.34"), wantTTL: 60 * time.Second,
			wantMsg: "AAAA partial.example.com: no usable answer",
		},
		{
			name: "an answer to another question is refused",
			setup: func(s *dnstest.Server) {
				s.Script("swap.example.com", dnstest.Response{Answer: []string{"swap.example.com. 60 IN A 93.184.216.34"}, Mutate: func(m *dns.Msg) {
					m.Question[0].Name = "other.example.com."
				}})
			},
			query: "swap.example.com", wantState: egress.ResolutionFailed, wantMsg: "not the question asked", transient: true,
		},
		{
			name: "an answer with the wrong ID is ignored (timeout)",
			setup: func(s *dnstest.Server) {
				s.Script("badid.example.com", dnstest.Response{Answer: []string{"badid.example.com. 60 IN A 93.184.216.34"}, Mutate: func(m *dns.Msg) { m.Id++ }})
			},
			query: "badid.example.com", wantState: egress.ResolutionFailed, wantMsg: "timeout", transient: true,
		},
		{
			name: "garbage bytes are a malformed answer",
			setup: func(s *dnstest.Server) {
				s.Script("garbage.example.com", dnstest.Response{Raw: func(q *dns.Msg) []byte {
					return []byte{byte(q.Id >> 8), byte(q.Id), 0x81, 0x80, 0, 1, 0, 5, 0, 0, 0, 0, 0xff}
				}})
			},
			query: "garbage.example.com", wantState: egress.ResolutionFailed, wantMsg: "malformed answer", transient: true,
		},
		{
			name: "a message that is not a response is refused",
			setup: func(s *dnstest.Server) {
				s.Script("noqr.example.com", dnstest.Response{Answer: []string{"noqr.example.com. 60 IN A 93.184.216.34"}, Mutate: func(m *dns.Msg) { m.Response = false }})
			},
			query: "noqr.example.com", wantState: egress.ResolutionFailed, wantMsg: "QR bit not set", transient: true,
		},
		{
			name: "the name itself refused: no query",
			setup: func(s *dnstest.Server) {
				s.Set("kubernetes.default.svc.cluster.local", "kubernetes.default.svc.cluster.local. 60 IN A 93.184.216.34")
			},
			query: "kubernetes.default.svc.cluster.local", wantState: egress.ResolutionForbiddenName,
			wantMsg: "refused by the name policy: under refused suffix .cluster.local",
		},
	}
	srv := dnstest.NewServer(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.setup(srv)
			cfg := testConfig(srv.Addr())
			if tt.family != "" {
				cfg.IPFamily = tt.family
			}
			if strings.Contains(tt.name, "timeout") || strings.Contains(tt.name, "wrong ID") {
				cfg.Timeout = 100 * time.Millisecond
			}
			r := newTestResolver(t, cfg)
			before := srv.Queries(tt.query)
			res := resolve(t, r, tt.query)
			checkResult(t, res, tt)
			if sent := srv.Queries(tt.query) - before; strings.HasSuffix(tt.name, "no query") && sent != 0 {
				t.Errorf("%d queries sent for a refused name", sent)
			}
		})
	}
}

func checkResult(t *testing.T, res Result, tt resolveCase) {
	t.Helper()
	if res.State != tt.wantState {
		t.Fatalf("state = %s (%q), want %s", res.State, res.Message, tt.wantState)
	}
	if !slices.Equal(res.Vetted, tt.wantVetted) {
		t.Errorf("vetted = %v, want %v", res.Vetted, tt.wantVetted)
	}
	if len(res.Blocked) != len(tt.wantBlocked) {
		t.Errorf("blocked = %v, want %v", res.Blocked, tt.wantBlocked)
	}
	for _, b := range res.Blocked {
		want, ok := tt.wantBlocked[b.IP.String()]
		if !ok || !strings.Contains(b.Reason, want) {
			t.Errorf("blocked %s (%q), want reason containing %q", b.IP, b.Reason, want)
		}
	}
	if !slices.Equal(res.Chain, tt.wantChain) {
		t.Errorf("chain = %q, want %q", res.Chain, tt.wantChain)
	}
	if res.TTL != tt.wantTTL {
		t.Errorf("TTL = %v, want %v", res.TTL, tt.wantTTL)
	}
	if tt.wantMsg == "" && res.Message != "" && res.State == egress.ResolutionResolved {
		t.Errorf("message = %q, want none", res.Message)
	}
	if !strings.Contains(res.Message, tt.wantMsg) {
		t.Errorf("message = %q, want it to contain %q", res.Message, tt.wantMsg)
	}
	if res.Transient != tt.transient {
		t.Errorf("transient = %v, want %v", res.Transient, tt.transient)
	}
}

func TestResolverQueriesAbsoluteNamesPerFamily(t *testing.T) {
	srv := dnstest.NewServer(t)
	srv.Set("abs.example.com", "abs.example.com. 60 IN A 93.184.216.34")
	tests := []struct {
		family IPFamily
		want   []uint16
	}{
		{IPv4, []uint16{dns.TypeA}},
		{IPv6, []uint16{dns.TypeAAAA}},
		{DualStack, []uint16{dns.TypeA, dns.TypeAAAA}},
	}
	for _, tt := range tests {
		t.Run(string(tt.family), func(t *testing.T) {
			before := len(srv.Log())
			cfg := testConfig(srv.Addr())
			cfg.IPFamily = tt.family
			resolve(t, newTestResolver(t, cfg), "abs.example.com")
			var got []uint16
			for _, q := range srv.Log()[before:] {
				if q.Name != "abs.example.com." {
					t.Errorf("queried %q, want the absolute abs.example.com.", q.Name)
				}
				got = append(got, q.Type)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("query types = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestResolverTruncatedAnswerUsesTCP(t *testing.T) {
	srv := dnstest.NewServer(t)
	srv.Script("tc.example.com", dnstest.Response{Truncate: true, Answer: []string{"tc.example.com. 60 IN A 93.184.216.34"}})
	cfg := testConfig(srv.Addr())
	cfg.IPFamily = IPv4
	res := resolve(t, newTestResolver(t, cfg), "tc.example.com")
	if res.State != egress.ResolutionResolved {
		t.Fatalf("state %s: %s", res.State, res.Message)
	}
	var nets []string
	for _, q := range srv.Log() {
		nets = append(nets, q.Net)
	}
	if !slices.Equal(nets, []string{"udp", "tcp"}) {
		t.Errorf("transports = %v, want udp then tcp", nets)
	}
}

func TestResolverVeryLargeAnswer(t *testing.T) {
	srv := dnstest.NewServer(t)
	var recs []string
	for i := range 300 {
		recs = append(recs, fmt.Sprintf("big.example.com. 60 IN A 93.%d.%d.1", 100+i/200, i%200))
	}
	for i := range 100 {
		recs = append(recs, fmt.Sprintf("big.example.com. 60 IN A 10.0.%d.1", i))
	}
	srv.Set("big.example.com", recs...)
	cfg := testConfig(srv.Addr())
	cfg.IPFamily = IPv4
	res := resolve(t, newTestResolver(t, cfg), "big.example.com")
	if res.State != egress.ResolutionResolved {
		t.Fatalf("state %s: %s", res.State, res.Message)
	}
	if len(res.Vetted) != MaxAddresses || len(res.Blocked) != MaxAddresses {
		t.Errorf("kept %d vetted and %d blocked, want %d each", len(res.Vetted), len(res.Blocked), MaxAddresses)
	}
	if !strings.Contains(res.Message, "400 addresses answered; only the first 64") {
		t.Errorf("message %q does not say the answer was capped", res.Message)
	}
	if res.Vetted[0] != netip.MustParseAddr("93.100.0.1") || !slices.IsSortedFunc(res.Vetted, netip.Addr.Compare) {
		t.Errorf("vetted addresses are not the sorted lowest ones: %v...", res.Vetted[:3])
	}
	tcp := 0
	for _, q := range srv.Log() {
		if q.Net == "tcp" {
			tcp++
		}
	}
	if tcp != 1 {
		t.Errorf("%d TCP queries, want 1 (the answer does not fit UDP)", tcp)
	}
}

func TestResolverServersInOrder(t *testing.T) {
	good := dnstest.NewServer(t)
	good.Set("api.example.com", "api.example.com. 60 IN A 93.184.216.34")
	tests := []struct {
		name    string
		first   func(t testing.TB) string
		maxTime time.Duration
	}{
		{"first server does not answer", dnstest.NewBlackhole, 2 * time.Second},
		{"nothing listens on the first server", dnstest.ClosedAddr, time.Second},
		{"first server fails with SERVFAIL", func(t testing.TB) string {
			s := dnstest.NewServer(t)
			s.Script("api.example.com", dnstest.Response{Rcode: dns.RcodeServerFailure})
			return s.Addr()
		}, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(tt.first(t), good.Addr())
			cfg.Timeout = 200 * time.Millisecond
			start := time.Now()
			res := resolve(t, newTestResolver(t, cfg), "api.example.com")
			if res.State != egress.ResolutionResolved || !slices.Equal(res.Vetted, addrs("93.184.216.34")) {
				t.Fatalf("got %s %v (%s), want the second server's answer", res.State, res.Vetted, res.Message)
			}
			if d := time.Since(start); d > tt.maxTime {
				t.Errorf("took %v, want under %v", d, tt.maxTime)
			}
		})
	}
	t.Run("every server dead: the message names each", func(t *testing.T) {
		a, b := dnstest.NewBlackhole(t), dnstest.ClosedAddr(t)
		cfg := testConfig(a, b)
		cfg.Timeout = 100 * time.Millisecond
		cfg.Attempts = 2
		res := resolve(t, newTestResolver(t, cfg), "api.example.com")
		if res.State != egress.ResolutionFailed || !res.Transient {
			t.Fatalf("got %s transient=%v", res.State, res.Transient)
		}
		for _, want := range []string{a + ": timeout", b + ": connection refused", "after 2 attempt(s)"} {
			if !strings.Contains(res.Message, want) {
				t.Errorf("message %q does not contain %q", res.Message, want)
			}
		}
	})
}

func TestResolverAttemptsRetryAfterAFailure(t *testing.T) {
	srv := dnstest.NewServer(t)
	srv.Script("flaky.example.com",
		dnstest.Response{Drop: true},
		dnstest.Response{Answer: []string{"flaky.example.com. 60 IN A 93.184.216.34"}})
	cfg := testConfig(srv.Addr())
	cfg.IPFamily = IPv4
	cfg.Timeout = 100 * time.Millisecond
	cfg.Attempts = 2
	res := resolve(t, newTestResolver(t, cfg), "flaky.example.com")
	if res.State != egress.ResolutionResolved {
		t.Fatalf("state %s (%s), want Resolved on the second attempt", res.State, res.Message)
	}
	cfg.Attempts = 1
	srv.Script("flaky.example.com",
		dnstest.Response{Drop: true},
		dnstest.Response{Answer: []string{"flaky.example.com. 60 IN A 93.184.216.34"}})
	if res := resolve(t, newTestResolver(t, cfg), "flaky.example.com"); res.State != egress.ResolutionFailed {
		t.Fatalf("state %s with one attempt, want ResolutionFailed", res.State)
	}
}

func TestResolverCancelStopsAtOnce(t *testing.T) {
	cfg := testConfig(dnstest.NewBlackhole(t))
	cfg.Timeout = 10 * time.Second
	r := newTestResolver(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan Result)
	go func() { done <- r.Resolve(ctx, "api.example.com") }()
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	cancel()
	select {
	case res := <-done:
		if res.State != egress.ResolutionFailed || len(res.Vetted) > 0 {
			t.Errorf("cancelled resolution = %s %v", res.State, res.Vetted)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("Resolve returned %v after cancel", d)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Resolve did not return within 5s of cancel")
	}
}

func TestResultResolution(t *testing.T) {
	exp := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	res := Result{State: egress.ResolutionResolved, Vetted: addrs("93.184.216.34"), Blocked: []egress.BlockedAddress{{IP: netip.MustParseAddr("10.0.0.1"), Reason: "private (10.0.0.0/8)"}}}
	got := res.Resolution(exp)
	if len(got.Vetted) != 1 || got.Vetted[0].Expires != exp || got.Vetted[0].IP != res.Vetted[0] || len(got.Blocked) != 1 {
		t.Fatalf("Resolution = %+v", got)
	}
	got.Blocked[0].Reason = "changed"
	if res.Blocked[0].Reason != "private (10.0.0.0/8)" {
		t.Error("Resolution shares the Blocked slice with the Result")
	}
}

func TestEffectiveTTL(t *testing.T) {
	for _, tt := range []struct{ in, want uint32 }{{0, 0}, {60, 60}, {math.MaxInt32, math.MaxInt32}, {math.MaxInt32 + 1, 0}, {math.MaxUint32, 0}} {
		if got := effectiveTTL(tt.in); got != tt.want {
			t.Errorf("effectiveTTL(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}
