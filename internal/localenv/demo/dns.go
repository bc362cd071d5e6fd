package demo

import (
	"errors"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dnsTTL is the TTL of the demo's answers.
const dnsTTL = 30

// DNS answers A queries for its names with fixed addresses (AAAA: no records) and
// forwards every other question to upstream servers, so Backends for real outside
// names keep working beside the demo.
type DNS struct {
	Addr     string
	names    map[string]net.IP
	upstream []string
	udp, tcp *dns.Server
}

// StartDNS serves UDP and TCP on the same free port of 127.0.0.1.
func StartDNS(names map[string]net.IP, upstream []string) (*DNS, error) {
	d := &DNS{names: map[string]net.IP{}, upstream: upstream}
	for name, ip := range names {
		d.names[dns.CanonicalName(name)] = ip
	}
	var err error
	for range 10 {
		if err = d.listen(); err == nil {
			return d, nil
		}
	}
	return nil, err
}

// listen binds UDP on a free port, then TCP on the same port (which may be taken: the
// caller retries).
func (d *DNS) listen() error {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", pc.LocalAddr().String())
	if err != nil {
		pc.Close()
		return err
	}
	d.Addr = pc.LocalAddr().String()
	d.udp = &dns.Server{PacketConn: pc, Handler: d}
	d.tcp = &dns.Server{Listener: ln, Handler: d}
	go func() { _ = d.udp.ActivateAndServe() }()
	go func() { _ = d.tcp.ActivateAndServe() }()
	return nil
}

// Close stops both servers.
func (d *DNS) Close() error { return errors.Join(d.udp.Shutdown(), d.tcp.Shutdown()) }

// ServeDNS answers one query.
func (d *DNS) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	if len(req.Question) != 1 {
		reply(w, new(dns.Msg).SetRcode(req, dns.RcodeFormatError))
		return
	}
	q := req.Question[0]
	ip, ours := d.names[strings.ToLower(q.Name)]
	if !ours {
		reply(w, d.forward(w, req))
		return
	}
	m := new(dns.Msg).SetReply(req)
	m.Authoritative = true
	if q.Qtype == dns.TypeA && q.Qclass == dns.ClassINET {
		m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: dnsTTL}, A: ip.To4()})
	}
	reply(w, m)
}

// forward asks each upstream server in turn; SERVFAIL when none answers, REFUSED when
// there is none.
func (d *DNS) forward(w dns.ResponseWriter, req *dns.Msg) *dns.Msg {
	if len(d.upstream) == 0 {
		return new(dns.Msg).SetRcode(req, dns.RcodeRefused)
	}
	network := "udp"
	if _, ok := w.RemoteAddr().(*net.TCPAddr); ok {
		network = "tcp"
	}
	c := &dns.Client{Net: network, Timeout: 2 * time.Second}
	for _, server := range d.upstream {
		if resp, _, err := c.Exchange(req, server); err == nil {
			return resp
		}
	}
	return new(dns.Msg).SetRcode(req, dns.RcodeServerFailure)
}

func reply(w dns.ResponseWriter, m *dns.Msg) { _ = w.WriteMsg(m) }
