// Command hostdns is the single-node cluster's host DNS server (make cluster-up). It is
// authoritative for the names in its records file and never forwards: everything else
// gets NXDOMAIN, so no name a pod asks for is ever looked up outside this machine.
// CoreDNS forwards every non-cluster name here, and pods with dnsPolicy Default use it.
//
// The records file has one name per line followed by its addresses ("# " starts a
// comment). It is read again whenever it changes, so a test can move a name.
//
//	api.partner.example  11.22.33.44
package main

import (
	"bufio"
	"flag"
	"fmt"
	"log"
	"net/netip"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

func main() {
	listen := flag.String("listen", "10.200.0.1:53", "UDP and TCP address to serve on")
	file := flag.String("records", "", "records file: NAME ADDRESS... per line")
	ttl := flag.Uint("ttl", 5, "TTL of every answer, in seconds")
	flag.Parse()
	if *file == "" {
		log.Fatal("hostdns: -records is required")
	}
	z := &zone{path: *file, ttl: uint32(*ttl)}
	if err := z.reload(); err != nil {
		log.Fatalf("hostdns: %v", err)
	}
	errc := make(chan error, 2)
	for _, network := range []string{"udp", "tcp"} {
		srv := &dns.Server{Addr: *listen, Net: network, Handler: z}
		go func() { errc <- srv.ListenAndServe() }()
	}
	log.Printf("hostdns: serving %s on %s", *file, *listen)
	log.Fatalf("hostdns: %v", <-errc)
}

// zone answers A and AAAA questions from the records file.
type zone struct {
	path string
	ttl  uint32

	mu      sync.Mutex
	modTime time.Time
	records map[string][]netip.Addr // lowercase, fully qualified
}

func (z *zone) ServeDNS(w dns.ResponseWriter, q *dns.Msg) {
	if err := z.reload(); err != nil {
		log.Printf("hostdns: keeping the previous records: %v", err)
	}
	m := new(dns.Msg)
	m.SetReply(q)
	m.Authoritative = true
	if len(q.Question) != 1 {
		m.Rcode = dns.RcodeFormatError
		_ = w.WriteMsg(m)
		return
	}
	question := q.Question[0]
	addrs, known := z.lookup(question.Name)
	if !known {
		m.Rcode = dns.RcodeNameError
	}
	for _, a := range addrs {
		if rr := z.answer(question, a); rr != nil {
			m.Answer = append(m.Answer, rr)
		}
	}
	_ = w.WriteMsg(m)
}

func (z *zone) answer(q dns.Question, a netip.Addr) dns.RR {
	hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: z.ttl}
	switch {
	case q.Qtype == dns.TypeA && a.Is4():
		hdr.Rrtype = dns.TypeA
		return &dns.A{Hdr: hdr, A: a.AsSlice()}
	case q.Qtype == dns.TypeAAAA && a.Is6():
		hdr.Rrtype = dns.TypeAAAA
		return &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()}
	}
	return nil
}

func (z *zone) lookup(name string) ([]netip.Addr, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	addrs, ok := z.records[strings.ToLower(dns.Fqdn(name))]
	return addrs, ok
}

// reload reads the file again when its modification time changed.
func (z *zone) reload() error {
	fi, err := os.Stat(z.path)
	if err != nil {
		return err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if fi.ModTime().Equal(z.modTime) && z.records != nil {
		return nil
	}
	records, err := parse(z.path)
	if err != nil {
		return err
	}
	z.records, z.modTime = records, fi.ModTime()
	log.Printf("hostdns: %d names from %s", len(records), z.path)
	return nil
}

func parse(path string) (map[string][]netip.Addr, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	records := map[string][]netip.Addr{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) < 2 {
			return nil, fmt.Errorf("%s:%d: want NAME ADDRESS...", path, n)
		}
		name := strings.ToLower(dns.Fqdn(fields[0]))
		for _, s := range fields[1:] {
			a, err := netip.ParseAddr(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
			records[name] = append(records[name], a.Unmap())
		}
	}
	return records, sc.Err()
}
