package dnsguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"github.com/miekg/dns"
)

// ednsSize is the UDP payload size advertised (the DNS flag day 2020 value).
const ednsSize = 1232

// exchange asks the servers in order, for r.attempts rounds, and returns the first
// usable answer: a well-formed response to this very question with rcode NOERROR or
// NXDOMAIN. A truncated UDP answer is asked again over TCP.
func (r *Resolver) exchange(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	last := make([]string, len(r.servers))
	for range r.attempts {
		for i, srv := range r.servers {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			msg, err := r.exchangeOne(ctx, srv, name, qtype)
			if err == nil {
				return msg, nil
			}
			last[i] = srv + ": " + err.Error()
		}
	}
	return nil, fmt.Errorf("no usable answer after %d attempt(s): %s", r.attempts, strings.Join(last, "; "))
}

// exchangeOne asks one server, over UDP then, if truncated, over TCP.
func (r *Resolver) exchangeOne(ctx context.Context, srv, name string, qtype uint16) (*dns.Msg, error) {
	q := new(dns.Msg)
	q.SetQuestion(dns.Fqdn(name), qtype)
	q.RecursionDesired = true
	q.SetEdns0(ednsSize, false)
	resp, err := r.roundTrip(ctx, "udp", srv, q)
	if err == nil && resp.Truncated {
		r.metrics.query(QueryTruncated)
		resp, err = r.roundTrip(ctx, "tcp", srv, q)
		if err == nil && resp.Truncated {
			r.metrics.query(QueryMalformed)
			return nil, errors.New("answer truncated even over TCP")
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err() // shutting down: not the server's fault, not counted
		}
		result, text := classify(err)
		r.metrics.query(result)
		return nil, errors.New(text)
	}
	if err := checkResponse(q, resp); err != nil {
		r.metrics.query(QueryMalformed)
		return nil, err
	}
	switch resp.Rcode {
	case dns.RcodeSuccess:
		r.metrics.query(QueryNoError)
		return resp, nil
	case dns.RcodeNameError:
		r.metrics.query(QueryNXDomain)
		return resp, nil
	case dns.RcodeServerFailure:
		r.metrics.query(QueryServFail)
	case dns.RcodeRefused:
		r.metrics.query(QueryRefused)
	default:
		r.metrics.query(QueryRcode)
	}
	return nil, errors.New(rcodeName(resp.Rcode))
}

// roundTrip sends q over network with the per-query timeout; cancelling ctx closes the
// socket at once.
func (r *Resolver) roundTrip(ctx context.Context, network, srv string, q *dns.Msg) (*dns.Msg, error) {
	qctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c := &dns.Client{Net: network, Timeout: r.timeout, UDPSize: ednsSize}
	conn, err := c.DialContext(qctx, srv)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// The deadline is the socket's; only the caller's cancellation closes it early.
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	defer stop()
	resp, _, err := c.ExchangeWithConnContext(qctx, q, conn)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err == nil && resp == nil:
		err = errors.New("empty answer")
	}
	return resp, err
}

// checkResponse refuses a message that is not an answer to q's question.
func checkResponse(q, resp *dns.Msg) error {
	switch {
	case !resp.Response:
		return errors.New("malformed answer: QR bit not set")
	case resp.Opcode != dns.OpcodeQuery:
		return fmt.Errorf("malformed answer: opcode %s", dns.OpcodeToString[resp.Opcode])
	case len(resp.Question) != 1:
		return fmt.Errorf("malformed answer: %d questions", len(resp.Question))
	}
	got, want := resp.Question[0], q.Question[0]
	if NormalizeName(got.Name) != NormalizeName(want.Name) || got.Qtype != want.Qtype || got.Qclass != want.Qclass {
		return fmt.Errorf("malformed answer: it answers %s %s, not the question asked", got.Name, dns.TypeToString[got.Qtype])
	}
	return nil
}

// classify maps a transport error to a metrics result and a short text.
func classify(err error) (result, text string) {
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return QueryTimeout, "timeout"
	case errors.Is(err, context.Canceled):
		return QueryNetwork, "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return QueryNetwork, "connection refused"
	case errors.Is(err, dns.ErrId):
		return QueryMalformed, "malformed answer: wrong message ID"
	}
	var de *dns.Error
	if errors.As(err, &de) {
		return QueryMalformed, "malformed answer: " + err.Error()
	}
	return QueryNetwork, err.Error()
}

func rcodeName(rcode int) string {
	if s, ok := dns.RcodeToString[rcode]; ok {
		return s
	}
	return fmt.Sprintf("rcode %d", rcode)
}
