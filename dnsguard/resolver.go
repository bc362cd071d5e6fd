package dnsguard

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/portcullis-io/portcullis/egress"
)

// MaxAddresses caps the vetted (and, separately, the blocked) addresses kept per name.
const MaxAddresses = 64

// Result is everything the guard learned resolving one name.
type Result struct {
	// Name is the normalized name (lowercase, no trailing dot).
	Name  string
	State egress.ResolutionState
	// Message explains a state other than Resolved, or notes a partial answer.
	Message string
	// Vetted passed the address policy; sorted, at most MaxAddresses.
	Vetted []netip.Addr
	// Blocked were refused, with reasons; sorted, at most MaxAddresses.
	Blocked []egress.BlockedAddress
	// Chain are the CNAME targets followed, in order (Name itself not included).
	Chain []string
	// TTL is the minimum TTL over the records used, clamped to [min, max]; zero when no
	// record was used.
	TTL time.Duration
	// Transient says the failure may be temporary (timeout, SERVFAIL, REFUSED, network):
	// the Store keeps serving the last vetted set for the stale grace.
	Transient bool
	// Final says the name itself is refused by the name policy: no query was made and
	// asking again cannot change the outcome.
	Final bool
}

// Resolution converts r into the translator's form, each vetted address valid until expires.
func (r Result) Resolution(expires time.Time) egress.Resolution {
	res := egress.Resolution{State: r.State, Message: r.Message}
	for _, a := range r.Vetted {
		res.Vetted = append(res.Vetted, egress.VettedAddress{IP: a, Expires: expires})
	}
	res.Blocked = append([]egress.BlockedAddress(nil), r.Blocked...)
	return res
}

// Resolver resolves names the way the gateway does. It is safe for concurrent use.
type Resolver struct {
	servers  []string
	qtypes   []uint16
	timeout  time.Duration
	attempts int
	minTTL   time.Duration
	maxTTL   time.Duration
	names    *NamePolicy
	addrs    *AddressPolicy
	metrics  *Metrics
	// query asks the servers; replaced in tests of the answer handling.
	query queryFunc
}

// NewResolver builds a resolver from a valid cfg; m may be nil.
func NewResolver(cfg Config, m *Metrics) (*Resolver, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	servers, err := cfg.Servers()
	if err != nil {
		return nil, err
	}
	names, _ := cfg.NamePolicy()
	addrs, _ := cfg.AddressPolicy()
	r := &Resolver{
		servers:  servers,
		qtypes:   qtypesFor(cfg.IPFamily),
		timeout:  cfg.Timeout,
		attempts: cfg.Attempts,
		minTTL:   cfg.MinTTL,
		maxTTL:   cfg.MaxTTL,
		names:    names,
		addrs:    addrs,
		metrics:  m,
	}
	r.query = r.exchange
	return r, nil
}

func qtypesFor(f IPFamily) []uint16 {
	switch f {
	case IPv4:
		return []uint16{dns.TypeA}
	case IPv6:
		return []uint16{dns.TypeAAAA}
	}
	return []uint16{dns.TypeA, dns.TypeAAAA}
}

// NamePolicy returns the name policy the resolver enforces.
func (r *Resolver) NamePolicy() *NamePolicy { return r.names }

// AddressPolicy returns the address policy the resolver enforces (the translator uses
// the same one for IP destinations).
func (r *Resolver) AddressPolicy() *AddressPolicy { return r.addrs }

// Servers returns the DNS servers in the order they are tried.
func (r *Resolver) Servers() []string { return append([]string(nil), r.servers...) }

// Resolve resolves name absolute (no search domains) for the configured families.
func (r *Resolver) Resolve(ctx context.Context, name string) Result {
	n := NormalizeName(name)
	if ok, reason := r.names.CheckName(n); !ok {
		return Result{Name: n, State: egress.ResolutionForbiddenName, Message: "refused by the name policy: " + reason, Final: true}
	}
	start := time.Now()
	fams := make([]familyResult, len(r.qtypes))
	var wg sync.WaitGroup
	for i, qt := range r.qtypes {
		wg.Go(func() { fams[i] = followChain(ctx, r.names, r.query, n, qt) })
	}
	wg.Wait()
	res := r.combine(n, fams)
	r.metrics.resolution(time.Since(start))
	return res
}

// combine merges the families' walks into one result: a refused CNAME target anywhere
// refuses the name; otherwise every address found is vetted.
func (r *Resolver) combine(name string, fams []familyResult) Result {
	res := Result{Name: name}
	ttl := uint32(1<<32 - 1)
	for _, f := range fams {
		for _, c := range f.chain {
			if !containsString(res.Chain, c) {
				res.Chain = append(res.Chain, c)
			}
		}
		ttl = min(ttl, f.ttl)
	}
	if ttl != 1<<32-1 {
		res.TTL = r.clamp(time.Duration(ttl) * time.Second)
	}
	for _, f := range fams {
		if f.outcome == outForbidden {
			res.State, res.Message = egress.ResolutionForbiddenName, f.msg
			return res
		}
	}
	answered := r.vet(&res, fams)
	switch {
	case len(res.Vetted) > 0:
		res.State = egress.ResolutionResolved
		res.Message = joinNotes(capNote(answered), failureNotes(fams))
	case len(res.Blocked) > 0:
		res.State = egress.ResolutionAllForbidden
		res.Message = joinNotes(fmt.Sprintf("all %d answers refused by the address policy", answered), failureNotes(fams))
	default:
		r.negative(&res, fams)
	}
	return res
}

// vet checks every distinct address against the policy, sorts and caps both lists, and
// returns how many distinct addresses were answered.
func (r *Resolver) vet(res *Result, fams []familyResult) int {
	seen := map[netip.Addr]bool{}
	for _, f := range fams {
		for _, a := range f.addrs {
			if seen[a] {
				continue
			}
			seen[a] = true
			v := r.addrs.Check(a)
			if v.OK {
				res.Vetted = append(res.Vetted, a)
				continue
			}
			r.metrics.blockedAnswer(v.Category)
			res.Blocked = append(res.Blocked, egress.BlockedAddress{IP: a, Reason: v.Reason})
		}
	}
	sortAddrs(res.Vetted)
	sortBlocked(res.Blocked)
	if len(res.Vetted) > MaxAddresses {
		res.Vetted = res.Vetted[:MaxAddresses]
	}
	if len(res.Blocked) > MaxAddresses {
		res.Blocked = res.Blocked[:MaxAddresses]
	}
	return len(seen)
}

// negative sets the state when no address was answered at all.
func (r *Resolver) negative(res *Result, fams []familyResult) {
	res.State = egress.ResolutionFailed
	for _, want := range []outcome{outBroken, outFailed, outNXDomain} {
		var msgs []string
		for _, f := range fams {
			if f.outcome == want && !containsString(msgs, f.msg) {
				msgs = append(msgs, f.msg)
			}
		}
		if len(msgs) == 0 {
			continue
		}
		res.Message = joinNotes(msgs...)
		switch want {
		case outFailed:
			res.Transient = true
		case outNXDomain:
			res.State = egress.ResolutionNXDomain
		}
		return
	}
	res.Message = "no " + r.familyNames() + " records"
}

func (r *Resolver) familyNames() string {
	if len(r.qtypes) == 2 {
		return "A/AAAA"
	}
	return dns.TypeToString[r.qtypes[0]]
}

func (r *Resolver) clamp(d time.Duration) time.Duration {
	return min(max(d, r.minTTL), r.maxTTL)
}

func capNote(answered int) string {
	if answered > MaxAddresses {
		return fmt.Sprintf("%d addresses answered; only the first %d vetted and %d blocked (in address order) are kept", answered, MaxAddresses, MaxAddresses)
	}
	return ""
}

// failureNotes describes families that did not end with addresses, for partial answers.
func failureNotes(fams []familyResult) string {
	var notes []string
	for _, f := range fams {
		if f.outcome == outFailed || f.outcome == outBroken {
			notes = append(notes, f.msg)
		}
	}
	return joinNotes(notes...)
}

func joinNotes(notes ...string) string {
	out := ""
	for _, n := range notes {
		if n == "" {
			continue
		}
		if out != "" {
			out += "; "
		}
		out += n
	}
	return out
}

func sortAddrs(a []netip.Addr) {
	slices.SortFunc(a, netip.Addr.Compare)
}

func sortBlocked(b []egress.BlockedAddress) {
	slices.SortFunc(b, func(x, y egress.BlockedAddress) int { return x.IP.Compare(y.IP) })
}
