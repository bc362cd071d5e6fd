package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/dnsguard"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// translateFlags are the options of `portcullis translate`.
type translateFlags struct {
	files        stringList
	addresses    stringList
	output       string
	gateway      string
	adminPort    uint
	unrestricted string
	systemCAFile string
	guard        dnsguard.Config
}

// runTranslate translates Kubernetes objects from files offline: it prints the statuses and
// the Envoy configuration the gateway would serve, or a static Envoy bootstrap.
func runTranslate(args []string, stdout, stderr io.Writer) int {
	f, err := parseTranslateFlags(args, stderr)
	if err != nil {
		return 2
	}
	adm, err := newAdmission()
	if err != nil {
		fmt.Fprintf(stderr, "portcullis translate: %v\n", err)
		return 1
	}
	res, err := loadFiles(f.files, adm)
	if err != nil {
		fmt.Fprintf(stderr, "portcullis translate: %v\n", err)
		return 1
	}
	if refusals := adm.validate(); len(refusals) > 0 {
		fmt.Fprintln(stderr, strings.Join(refusals, "\n"))
		fmt.Fprintf(stderr, "portcullis translate: the API server would refuse %d object(s) (above, as kubectl apply prints it); nothing was translated\n", len(refusals))
		return 1
	}
	if err := adm.addTo(res); err != nil {
		fmt.Fprintf(stderr, "portcullis translate: %v\n", err)
		return 1
	}
	addrs, policy, err := vetAddresses(f)
	if err != nil {
		fmt.Fprintf(stderr, "portcullis translate: %v\n", err)
		return 2
	}
	unrestricted, _ := parseUnrestricted(f.unrestricted) // validated
	clusterCIDRs, _ := f.guard.ClusterPrefixes()         // validated by vetAddresses
	result := translate.Translate(res, addrs, translate.Options{AddressPolicy: policy, ClusterCIDRs: clusterCIDRs, Now: time.Now(), Unrestricted: unrestricted})
	opts := envoyconfig.Options{SystemCAFile: f.systemCAFile}
	if f.output == "static-bootstrap" {
		err = printStatic(stdout, result, f.gateway, opts, uint32(f.adminPort))
	} else {
		err = printResult(stdout, result, opts, f.output)
	}
	if err != nil {
		fmt.Fprintf(stderr, "portcullis translate: %v\n", err)
		return 1
	}
	return 0
}

func parseTranslateFlags(args []string, stderr io.Writer) (*translateFlags, error) {
	f := &translateFlags{guard: dnsguard.DefaultConfig()}
	fs := flag.NewFlagSet("translate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: portcullis translate -f FILE... [--address HOST=IP]... [-o yaml|json|static-bootstrap] [--gateway NS/NAME] [DNS guard policy flags]")
		fmt.Fprintln(stderr, "\nTranslates Gateways, HTTPRoutes, Backends and what they reference, offline, and prints the statuses\nand the Envoy configuration per Gateway. Secrets are shown by name only, except in static-bootstrap.")
		fs.PrintDefaults()
	}
	fs.Var(&f.files, "f", "YAML or JSON file of Kubernetes objects, or - for standard input (repeatable)")
	fs.Var(&f.addresses, "address", "HOST=IP: what HOST resolves to, vetted by the same address policy as the gateway's DNS guard (repeatable)")
	fs.StringVar(&f.output, "o", "yaml", "output: yaml, json, or static-bootstrap (a complete static Envoy configuration, secrets inline)")
	fs.StringVar(&f.gateway, "gateway", "", "NAMESPACE/NAME of the Gateway for -o static-bootstrap (needed when there are several)")
	fs.UintVar(&f.adminPort, "admin-port", 19000, "Envoy admin port on 127.0.0.1 for -o static-bootstrap")
	fs.StringVar(&f.systemCAFile, "system-ca-file", "/etc/ssl/certs/ca-certificates.crt", "the trust store Envoy uses for Backends that trust the System CAs")
	fs.StringVar(&f.unrestricted, "unrestricted-callers", "", unrestrictedUsage)
	f.guard.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	var problems []string
	if _, err := parseUnrestricted(f.unrestricted); err != nil {
		problems = append(problems, err.Error())
	}
	if len(f.files) == 0 {
		problems = append(problems, "at least one -f FILE is required")
	}
	if f.output != "yaml" && f.output != "json" && f.output != "static-bootstrap" {
		problems = append(problems, fmt.Sprintf("-o %q: use yaml, json or static-bootstrap", f.output))
	}
	if fs.NArg() > 0 {
		problems = append(problems, fmt.Sprintf("unexpected arguments %q (files go after -f)", fs.Args()))
	}
	if len(problems) > 0 {
		fmt.Fprintf(stderr, "portcullis translate: %s\n", strings.Join(problems, "; "))
		return nil, errors.New("usage")
	}
	return f, nil
}

func loadFiles(files []string, adm *admission) (*egress.Resources, error) {
	res := &egress.Resources{}
	for _, name := range files {
		adm.source = kubectlSource(name)
		if err := loadFile(res, name, adm.keep); err != nil {
			return nil, err
		}
	}
	return res, nil
}

func loadFile(res *egress.Resources, name string, keep egress.Keep) error {
	in := io.Reader(os.Stdin)
	if name != "-" {
		file, err := os.Open(name)
		if err != nil {
			return err
		}
		defer file.Close()
		in = file
	}
	if err := res.LoadFiltered(in, keep); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// vetAddresses turns --address values into what the DNS guard would have produced: each
// name must pass the name policy and each address the address policy, exactly as for a
// live resolution.
func vetAddresses(f *translateFlags) (egress.Addresses, egress.AddressPolicy, error) {
	if err := f.guard.Validate(); err != nil {
		return nil, nil, err
	}
	names, err := f.guard.NamePolicy()
	if err != nil {
		return nil, nil, err
	}
	policy, err := f.guard.AddressPolicy()
	if err != nil {
		return nil, nil, err
	}
	addrs := egress.Addresses{}
	for _, raw := range f.addresses {
		host, ipText, ok := strings.Cut(raw, "=")
		ip, err := netip.ParseAddr(ipText)
		if !ok || err != nil {
			return nil, nil, fmt.Errorf("--address %q: want HOST=IP, e.g. api.example.com=203.0.113.7", raw)
		}
		host = strings.TrimSuffix(strings.ToLower(host), ".")
		addrs[host] = vet(addrs[host], host, ip, names, policy)
	}
	return addrs, policy, nil
}

func vet(res egress.Resolution, host string, ip netip.Addr, names *dnsguard.NamePolicy, policy *dnsguard.AddressPolicy) egress.Resolution {
	if ok, reason := names.CheckName(host); !ok {
		return egress.Resolution{State: egress.ResolutionForbiddenName, Message: host + " is refused by the name policy: " + reason}
	}
	if ok, reason := policy.CheckAddr(ip); ok {
		res.Vetted = append(res.Vetted, egress.VettedAddress{IP: ip})
	} else {
		res.Blocked = append(res.Blocked, egress.BlockedAddress{IP: ip, Reason: reason})
	}
	res.State = egress.ResolutionResolved
	if len(res.Vetted) == 0 {
		res.State = egress.ResolutionAllForbidden
	}
	return res
}

// printResult prints the statuses and, per Gateway, its xDS resources with secrets by
// name only: YAML (streamed, translate_yaml.go) or JSON.
func printResult(w io.Writer, result translate.Result, opts envoyconfig.Options, format string) error {
	if format != "json" {
		return writeResultYAML(w, result, opts)
	}
	doc, err := resultDocument(result, opts)
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(js))
	return err
}

// resultDocument is the whole result as one value: every Gateway's
// envoyconfig.Document, then the statuses.
func resultDocument(result translate.Result, opts envoyconfig.Options) (any, error) {
	type gatewayOut struct {
		Name string           `json:"name"`
		XDS  map[string][]any `json:"xds"`
	}
	out := struct {
		Gateways []gatewayOut       `json:"gateways"`
		Statuses translate.Statuses `json:"statuses"`
	}{Statuses: result.Statuses}
	for _, gw := range result.Gateways {
		res, err := envoyconfig.Build(gw, opts)
		if err != nil {
			return nil, fmt.Errorf("gateway %s: cannot build Envoy configuration: %w", gw.Name, err)
		}
		doc, err := envoyconfig.Document(res, true)
		if err != nil {
			return nil, err
		}
		out.Gateways = append(out.Gateways, gatewayOut{Name: gw.Name, XDS: doc})
	}
	return out, nil
}

// printStatic prints a complete static Envoy configuration for one Gateway.
func printStatic(w io.Writer, result translate.Result, name string, opts envoyconfig.Options, adminPort uint32) error {
	gw, err := pickGateway(result.Gateways, name)
	if err != nil {
		return err
	}
	bs, err := envoyconfig.Static(gw, opts, adminPort)
	if err != nil {
		return fmt.Errorf("gateway %s: %w", gw.Name, err)
	}
	v, err := envoyconfig.JSONValue(bs)
	if err != nil {
		return err
	}
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return err
	}
	_, err = w.Write(y)
	return err
}

func pickGateway(gws []ir.Gateway, name string) (ir.Gateway, error) {
	var names []string
	for _, gw := range gws {
		if gw.Name == name || (name == "" && len(gws) == 1) {
			return gw, nil
		}
		names = append(names, gw.Name)
	}
	sort.Strings(names)
	switch {
	case len(names) == 0:
		return ir.Gateway{}, errors.New("no Gateway of a Portcullis GatewayClass was accepted; run with -o yaml to see the statuses")
	case name == "":
		return ir.Gateway{}, fmt.Errorf("several Gateways were translated; choose one with --gateway (%s)", strings.Join(names, ", "))
	}
	return ir.Gateway{}, fmt.Errorf("--gateway %s: no such accepted Gateway (have %s)", name, strings.Join(names, ", "))
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }
