package dnsguard

import (
	"context"
	"fmt"
	"math"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// MaxCNAMEHops is the longest CNAME chain followed; one more hop is a failure.
const MaxCNAMEHops = 8

// outcome is what one family's query chain ended with.
type outcome int

const (
	outAddresses outcome = iota // address records at the end of the chain
	outNoData                   // NOERROR but no record of the asked type
	outNXDomain                 // the chain's last name does not exist
	outFailed                   // no usable answer (timeout, SERVFAIL, ...): may be temporary
	outBroken                   // the answer is unusable (CNAME loop, too long, conflicting)
	outForbidden                // a CNAME target is refused by the name policy
)

// familyResult is the walk of one query type (A or AAAA) along the CNAME chain.
type familyResult struct {
	qtype   uint16
	outcome outcome
	msg     string
	addrs   []netip.Addr
	chain   []string // CNAME targets, in order
	ttl     uint32   // minimum TTL over the records used; math.MaxUint32 when none
}

// queryFunc asks the servers for one name and type and returns an answer whose rcode is
// NOERROR or NXDOMAIN, or an error.
type queryFunc func(ctx context.Context, name string, qtype uint16) (*dns.Msg, error)

// followChain resolves qname (normalized, already allowed by names) for qtype. It uses
// only answer-section records of class IN whose owner is the name currently sought:
// records for other names and the authority and additional sections are ignored. Every
// CNAME target must pass names. When an answer ends at a CNAME target without its
// records, the target is asked for itself.
func followChain(ctx context.Context, names *NamePolicy, query queryFunc, qname string, qtype uint16) familyResult {
	w := &chainWalk{names: names, qname: qname, cur: qname, seen: map[string]bool{qname: true},
		fr: familyResult{qtype: qtype, ttl: math.MaxUint32}}
	for range MaxCNAMEHops + 1 {
		msg, err := query(ctx, w.cur, qtype)
		if err != nil {
			return w.fr.end(outFailed, fmt.Sprintf("%s %s: %v", dns.TypeToString[qtype], w.cur, err))
		}
		if res, done := w.walk(msg); done {
			return res
		}
	}
	return w.fr.end(outBroken, fmt.Sprintf("CNAME chain longer than %d hops", MaxCNAMEHops))
}

// chainWalk is the state of one family's walk along a CNAME chain.
type chainWalk struct {
	names *NamePolicy
	qname string
	cur   string // the name whose records are sought
	seen  map[string]bool
	fr    familyResult
}

// walk follows msg's answer from w.cur. It is done unless the chain moved on to a name
// that msg holds no records for, which the caller then asks for.
func (w *chainWalk) walk(msg *dns.Msg) (res familyResult, done bool) {
	// With NXDOMAIN the answer may still carry the CNAMEs leading to the missing name:
	// they are walked (and checked), but no address is taken from it.
	nx := msg.Rcode == dns.RcodeNameError
	advanced := false
	for {
		addrs, targets, ttl := recordsAt(msg, w.cur, w.fr.qtype)
		switch {
		case len(targets) == 0 && nx:
			return w.fr.end(outNXDomain, nxMessage(w.qname, w.cur)), true
		case len(addrs) > 0 && len(targets) > 0:
			return w.fr.end(outBroken, fmt.Sprintf("%s has both a CNAME and %s records", w.cur, dns.TypeToString[w.fr.qtype])), true
		case len(addrs) > 0:
			w.fr.addrs, w.fr.ttl = addrs, min(w.fr.ttl, ttl)
			return w.fr.end(outAddresses, ""), true
		case len(targets) == 0 && advanced:
			return familyResult{}, false
		case len(targets) == 0:
			return w.fr.end(outNoData, ""), true
		case len(targets) > 1:
			return w.fr.end(outBroken, fmt.Sprintf("%s has %d different CNAME targets", w.cur, len(targets))), true
		}
		w.fr.ttl = min(w.fr.ttl, ttl)
		if res, stop := w.step(targets[0]); stop {
			return res, true
		}
		advanced = true
	}
}

// step checks one CNAME hop to target and moves there; stop reports a final result.
func (w *chainWalk) step(target string) (res familyResult, stop bool) {
	path := strings.Join(append([]string{w.qname}, w.fr.chain...), " -> ") + " -> " + target
	switch {
	case len(w.fr.chain) >= MaxCNAMEHops:
		return w.fr.end(outBroken, fmt.Sprintf("CNAME chain longer than %d hops (%s)", MaxCNAMEHops, path)), true
	case w.seen[target]:
		return w.fr.end(outBroken, "CNAME loop ("+path+")"), true
	}
	w.fr.chain = append(w.fr.chain, target)
	if ok, reason := w.names.CheckName(target); !ok {
		return w.fr.end(outForbidden, fmt.Sprintf("CNAME target %s is refused: %s", target, reason)), true
	}
	w.seen[target] = true
	w.cur = target
	return familyResult{}, false
}

func (fr familyResult) end(o outcome, msg string) familyResult {
	fr.outcome, fr.msg = o, msg
	if o != outAddresses {
		fr.addrs = nil
	}
	return fr
}

func nxMessage(qname, cur string) string {
	if cur == qname {
		return qname + " does not exist (NXDOMAIN)"
	}
	return fmt.Sprintf("CNAME target %s of %s does not exist (NXDOMAIN)", cur, qname)
}

// recordsAt returns the addresses of type qtype and the distinct CNAME targets that msg's
// answer section holds for owner, with the lowest TTL among the records returned.
func recordsAt(msg *dns.Msg, owner string, qtype uint16) (addrs []netip.Addr, targets []string, ttl uint32) {
	ttl = math.MaxUint32
	for _, rr := range msg.Answer {
		h := rr.Header()
		if h == nil || h.Class != dns.ClassINET || NormalizeName(h.Name) != owner {
			continue
		}
		switch v := rr.(type) {
		case *dns.A:
			if a, ok := netip.AddrFromSlice(v.A.To4()); ok && qtype == dns.TypeA && h.Rrtype == dns.TypeA {
				addrs = append(addrs, a)
				ttl = min(ttl, effectiveTTL(h.Ttl))
			}
		case *dns.AAAA:
			if len(v.AAAA) != net16 {
				continue
			}
			if a, ok := netip.AddrFromSlice(v.AAAA); ok && qtype == dns.TypeAAAA && h.Rrtype == dns.TypeAAAA {
				addrs = append(addrs, a)
				ttl = min(ttl, effectiveTTL(h.Ttl))
			}
		case *dns.CNAME:
			if h.Rrtype != dns.TypeCNAME {
				continue
			}
			t := NormalizeName(v.Target)
			if !containsString(targets, t) {
				targets = append(targets, t)
			}
			ttl = min(ttl, effectiveTTL(h.Ttl))
		}
	}
	return addrs, targets, ttl
}

const net16 = 16

// effectiveTTL treats a TTL with the most significant bit set as zero (RFC 2181 section 8).
func effectiveTTL(ttl uint32) uint32 {
	if ttl > math.MaxInt32 {
		return 0
	}
	return ttl
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
