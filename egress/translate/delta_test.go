package translate

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// TestBackendEditsTranslateAsCold walks every golden input through seeded edits of
// Backend specs alone (server names, ALPN, hostnames, ports, CA certificates and sets,
// generation bumps with nothing else changed), the changes a delta translation takes,
// with the lists in a new order at every step (as informers list a kind again), and
// compares each warm translation with a cold one. It also counts the deltas: an
// input whose Backends are all plain FQDN units referenced by HTTPRoutes must have been
// translated as one after a server name change, so the test fails if deltas stop
// happening, not only if they go wrong.
func TestBackendEditsTranslateAsCold(t *testing.T) {
	const steps = 12
	total := uint64(0)
	for _, in := range goldenInputs(t) {
		t.Run(filepath.Base(in), func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, in)
			if addrs == nil {
				addrs = egress.Addresses{}
			}
			rng := rand.New(rand.NewPCG(2, uint64(len(in))))
			cache, versions := NewCache(), newAPIVersions()
			compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
			for i := range steps {
				what := editBackendSpec(rng, res)
				shuffleLists(rng, res)
				compareWithCold(t, fmt.Sprintf("step %d: %s", i+1, what), cache, versions, res, addrs, opts)
			}
			total += cache.deltas
		})
	}
	if total == 0 {
		t.Fatal("no translation ran as a delta")
	}
	t.Logf("%d translations ran as deltas", total)
}

// TestServerNameChangeIsADelta: on the basic FQDN input, changing a Backend's server
// name translates as a delta, and a second change again, and deleting the Backend (a
// route delta: the route to it is attached again, its cluster dropped).
func TestServerNameChangeIsADelta(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "fqdn-backend-basic.in.yaml"))
	cache, versions := NewCache(), newAPIVersions()
	compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
	for i, want := range []uint64{1, 2} {
		sni := fmt.Sprintf("v%d.example.com", i)
		res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
		compareWithCold(t, "server name "+sni, cache, versions, res, addrs, opts)
		if cache.deltas != want {
			t.Fatalf("after server name change %d: %d deltas, want %d", i+1, cache.deltas, want)
		}
	}
	res.Backends = res.Backends[1:]
	compareWithCold(t, "a Backend deleted", cache, versions, res, addrs, opts)
	if cache.deltas != 3 {
		t.Fatalf("the deletion did not run as a delta (%d deltas)", cache.deltas)
	}
}

// shuffleLists puts the lists of objects a delta compares in a random order, as the
// manager's informers list a kind again: a delta must not depend on it.
func shuffleLists(rng *rand.Rand, res *egress.Resources) {
	shuffle(rng, res.Backends)
	shuffle(rng, res.HTTPRoutes)
	shuffle(rng, res.Gateways)
	shuffle(rng, res.Secrets)
	shuffle(rng, res.Namespaces)
	shuffle(rng, res.Services)
	shuffle(rng, res.EndpointSlices)
}

func shuffle[T any](rng *rand.Rand, s []T) {
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
}

// editBackendSpec changes one spec field of a random Backend and says what.
func editBackendSpec(rng *rand.Rand, res *egress.Resources) string {
	if len(res.Backends) == 0 {
		return "no Backend"
	}
	b := res.Backends[rng.IntN(len(res.Backends))]
	tls := tlsOf(b)
	switch rng.IntN(7) {
	case 0:
		if tls == nil {
			return "Backend " + b.Name + ": no TLS to rename"
		}
		sni := fmt.Sprintf("sni%d.example.com", rng.IntN(4))
		tls.ServerName = &sni
		return "Backend " + b.Name + ": server name " + sni
	case 1:
		if tls == nil {
			return "Backend " + b.Name + ": no TLS for ALPN"
		}
		tls.ALPNProtocols = [][]string{nil, {"h2"}, {"http/1.1"}}[rng.IntN(3)]
		return "Backend " + b.Name + ": ALPN"
	case 2:
		if f := b.Spec.Destination.FQDN; f != nil {
			f.Hostname = fmt.Sprintf("moved%d.example.com", rng.IntN(2))
			return "Backend " + b.Name + ": hostname " + f.Hostname
		}
		return "Backend " + b.Name + ": not an FQDN"
	case 3:
		if ports := b.Spec.Destination.Ports; len(ports) > 0 {
			ports[rng.IntN(len(ports))].Port++
			return "Backend " + b.Name + ": a port moved"
		}
		return "Backend " + b.Name + ": no port"
	case 4:
		if tls == nil {
			return "Backend " + b.Name + ": no TLS for CAs"
		}
		toggle(&tls.WellKnownCACertificates, egressv1alpha1.WellKnownCACertificatesSystem)
		return "Backend " + b.Name + ": system CAs set or cleared"
	case 5:
		if tls == nil || len(tls.CACertificates) == 0 {
			return "Backend " + b.Name + ": no CA certificates to drop"
		}
		tls.CACertificates = tls.CACertificates[:len(tls.CACertificates)-1]
		return "Backend " + b.Name + ": a CA certificate dropped"
	}
	b.Generation++ // a spec change that changes nothing translation reads
	return "Backend " + b.Name + ": same spec, next generation"
}

// tlsOf returns the Backend's inline TLS, or nil.
func tlsOf(b *egressv1alpha1.Backend) *egressv1alpha1.BackendTLS {
	d := &b.Spec.Destination
	switch {
	case d.FQDN != nil:
		return d.FQDN.TLS
	case d.IP != nil:
		return d.IP.TLS
	case d.KubernetesService != nil:
		return d.KubernetesService.TLS
	}
	return nil
}

// TestDeltaGivesUpWhereItMust edits, on a golden input, what a delta cannot vouch for and
// asserts each edit translates in full (and as a cold translation would), and that the
// edits it can take are deltas.
func TestDeltaGivesUpWhereItMust(t *testing.T) {
	sni := "edited.example.com"
	backend := func(res *egress.Resources, name string) *egressv1alpha1.Backend {
		for i := range res.Backends {
			if res.Backends[i].Name == name {
				return res.Backends[i]
			}
		}
		t.Fatalf("no Backend %s", name)
		return nil
	}
	tests := []struct {
		name, input string
		// prepare edits the input before the first translation, edit after it.
		prepare, edit func(res *egress.Resources, addrs egress.Addresses, opts *Options) egress.Addresses
		delta         bool
	}{
		{name: "a server name changes", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "a CA Secret is no longer needed", input: "backend-private-ca-sans-mtls",
			prepare: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				backend(res, "api").Spec.Destination.FQDN.TLS.ClientCertificate = nil
				return addrs
			},
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				tls := backend(res, "api").Spec.Destination.FQDN.TLS
				system := egressv1alpha1.WellKnownCACertificatesSystem
				tls.CACertificates, tls.WellKnownCACertificates = nil, &system
				return addrs
			}},
		{name: "a Backend with a client certificate changes its server name", input: "backend-private-ca-sans-mtls", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				backend(res, "api").Spec.Destination.FQDN.TLS.ServerName = &sni
				return addrs
			}},
		// The policy on the Service verifies against the system CAs: no secret tells
		// the two destinations apart, only the policy's ancestors.
		{name: "a Service destination becomes an FQDN", input: "backend-tls-merged-with-policy", prepare: systemPolicy,
			edit: func(res *egress.Resources, addrs egress.Addresses, opts *Options) egress.Addresses {
				toFQDN(backend(res, "billing"))
				return addrs
			}},
		{name: "an FQDN becomes a Service destination", input: "backend-tls-merged-with-policy",
			prepare: func(res *egress.Resources, addrs egress.Addresses, opts *Options) egress.Addresses {
				toFQDN(backend(res, "billing"))
				return systemPolicy(res, addrs, opts)
			},
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				d := &backend(res, "billing").Spec.Destination
				d.Type, d.FQDN, d.KubernetesService = egressv1alpha1.DestinationTypeService, nil, &egressv1alpha1.ServiceDestination{Name: "billing"}
				return addrs
			}},
		{name: "a BackendTLSPolicy names the Backend", input: "backend-tls-policy-refusals",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				backend(res, "targeted").Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "a TLSRoute names the Backend", input: "stream-routes",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				backend(res, "wild").Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "a Gateway's status is written", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Gateways[0].Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed"}}
				res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "every list comes in another order", input: "route-matches-refused", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				slices.Reverse(res.HTTPRoutes)
				slices.Reverse(res.Backends)
				slices.Reverse(res.Namespaces)
				slices.Reverse(res.Secrets)
				tls := &res.Backends[0].Spec.Destination.FQDN.TLS
				*tls = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "a route is replaced by another in its place (a route delta)", input: "route-matches-refused", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.HTTPRoutes[0].Name += "-replaced"
				return addrs
			}},
		{name: "a route's path changes (a route delta)", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				editRoutePath(rand.New(rand.NewPCG(1, 1)), res)
				return addrs
			}},
		{name: "a route to a Service changes", input: "route-to-service-with-policy",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.HTTPRoutes[0].Spec.Hostnames = append(res.HTTPRoutes[0].Spec.Hostnames, "more.example.com")
				return addrs
			}},
		{name: "a route and its Backend's port name change at once (the old cluster goes)", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				editRoutePath(rand.New(rand.NewPCG(1, 1)), res)
				res.Backends[0].Spec.Destination.Ports[0].Name = "renamed"
				return addrs
			}},
		{name: "a route on a forward proxy changes (a route delta: the tables open the tunnels again)", input: "forward-proxy", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				editRoutePath(rand.New(rand.NewPCG(1, 1)), res)
				return addrs
			}},
		{name: "a route and a Backend change at once", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				editRoutePath(rand.New(rand.NewPCG(1, 1)), res)
				res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
				return addrs
			}},
		{name: "a Gateway's annotation changes", input: "fqdn-backend-basic",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Gateways[0].Annotations = map[string]string{AccessLogAnnotation: "off"}
				return addrs
			}},
		{name: "a Gateway's listener changes", input: "fqdn-backend-basic",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Gateways[0].Spec.Listeners[0].Port++
				return addrs
			}},
		{name: "a Gateway stops presenting its client certificate", input: "gateway-backend-client-certificate",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Gateways[0].Spec.TLS = nil
				return addrs
			}},
		{name: "a Backend a route uses is deleted", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Backends = nil
				return addrs
			}},
		{name: "a Backend is created with its name's first answer", input: "fqdn-backend-basic", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				created := res.Backends[0].DeepCopy()
				created.Name, created.UID, created.ResourceVersion, created.Generation = "created", "", "", 0
				created.Spec.Destination.FQDN.Hostname = "created.example.com"
				res.Backends = append(res.Backends, created)
				next := maps.Clone(addrs)
				next["created.example.com"] = addrs["api.example.com"]
				return next
			}},
		{name: "a Backend is created whose name another Backend reads, with another answer", input: "fqdn-backend-basic",
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				created := res.Backends[0].DeepCopy()
				created.Name, created.UID, created.ResourceVersion, created.Generation = "created", "", "", 0
				res.Backends = append(res.Backends, created)
				next := maps.Clone(addrs)
				r := next["api.example.com"]
				r.Vetted = r.Vetted[:1]
				next["api.example.com"] = r
				return next
			}},
		{name: "a Backend is created that a refused route names (the route is attached again)", input: "fqdn-backend-basic", delta: true,
			prepare: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				r := res.HTTPRoutes[0].DeepCopy()
				r.Name = "waiting"
				r.Spec.Rules[0].BackendRefs[0].Name = "created"
				res.HTTPRoutes = append(res.HTTPRoutes, r)
				return addrs
			},
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				created := res.Backends[0].DeepCopy()
				created.Name, created.UID, created.ResourceVersion, created.Generation = "created", "", "", 0
				res.Backends = append(res.Backends, created)
				return addrs
			}},
		{name: "a Backend no Gateway uses is deleted", input: "backend-not-referenced", delta: true,
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Backends = nil
				next := maps.Clone(addrs)
				for name := range next {
					delete(next, name) // its name leaves the DNS guard with it
				}
				return next
			}},
		{name: "a Backend presenting the Gateway's own certificate is deleted (the listener keeps it)", input: "https-listener-certificates", delta: true,
			prepare: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				const objects = `
apiVersion: egress.portcullis.io/v1alpha1
kind: Backend
metadata: {name: api, namespace: gw}
spec:
  destination:
    type: FQDN
    fqdn:
      hostname: api.example.com
      tls: {wellKnownCACertificates: System, clientCertificate: {secretRef: {name: gateway-cert}}}
    ports: [{name: https, port: 443, protocol: HTTPS}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: api, namespace: gw}
spec:
  parentRefs: [{name: egress, sectionName: https}]
  rules: [{backendRefs: [{group: egress.portcullis.io, kind: Backend, name: api}]}]
`
				if err := res.Load(strings.NewReader(objects)); err != nil {
					panic(err)
				}
				next := maps.Clone(addrs)
				if next == nil {
					next = egress.Addresses{}
				}
				next["api.example.com"] = resolved("203.0.113.10")
				return next
			},
			edit: func(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				res.Backends = nil
				return addrs
			}},
		{name: "the clock goes back", input: "fqdn-backend-basic",
			edit: func(_ *egress.Resources, addrs egress.Addresses, opts *Options) egress.Addresses {
				opts.Now = opts.Now.Add(-1)
				return addrs
			}},
		{name: "a new answer map says the same", input: "fqdn-backend-basic", delta: true,
			edit: func(_ *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				return maps.Clone(addrs)
			}},
		{name: "an answer changes", input: "fqdn-backend-basic",
			edit: func(_ *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
				next := maps.Clone(addrs)
				r := next["api.example.com"]
				r.Vetted = r.Vetted[:1]
				next["api.example.com"] = r
				return next
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", tt.input+".in.yaml"))
			if tt.prepare != nil {
				addrs = tt.prepare(res, addrs, &opts)
			}
			cache, versions := NewCache(), newAPIVersions()
			versions.assign(t, res)
			addrs = versions.answers(t, addrs)
			compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
			addrs = tt.edit(res, addrs, &opts)
			versions.assign(t, res)
			opts.Cache = cache
			got := Translate(res, addrs, opts)
			if delta := cache.deltas == 1; delta != tt.delta {
				t.Fatalf("translated as a delta: %v, want %v", delta, tt.delta)
			}
			opts.Cache = NewCache()
			if want := Translate(res.DeepCopy(), addrs, opts); !reflect.DeepEqual(got, want) {
				t.Fatalf("the translation differs from a cold one:\n%s\nwant:\n%s", renderResult(t, got), renderResult(t, want))
			}
		})
	}
}

// systemPolicy makes the inputs' Backends and BackendTLSPolicies use no secret: no
// inline TLS, the system CAs.
func systemPolicy(res *egress.Resources, addrs egress.Addresses, _ *Options) egress.Addresses {
	for i := range res.Backends {
		if s := res.Backends[i].Spec.Destination.KubernetesService; s != nil {
			s.TLS = nil
		}
	}
	for i := range res.BackendTLSPolicies {
		v := &res.BackendTLSPolicies[i].Spec.Validation
		v.CACertificateRefs, v.WellKnownCACertificates = nil, ptrTo(gwapiv1.WellKnownCACertificatesSystem)
	}
	return addrs
}

// toFQDN makes a Backend's destination an FQDN without inline TLS.
func toFQDN(b *egressv1alpha1.Backend) {
	d := &b.Spec.Destination
	d.Type, d.KubernetesService = egressv1alpha1.DestinationTypeFQDN, nil
	d.FQDN = &egressv1alpha1.FQDNDestination{Hostname: "billing.internal.example"}
}

// TestSameInterfaceNeverPanics compares address policies of every shape a caller may
// pass: pointers by identity, slices by content, funcs never the same, and a
// comparable struct holding an uncomparable value without panicking.
func TestSameInterfaceNeverPanics(t *testing.T) {
	type holder struct{ v any }
	p, q := &prefixPolicy{}, &prefixPolicy{}
	f := func() {}
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"the same pointer", p, p, true},
		{"two pointers to equal values", p, q, false},
		{"equal slices", prefixPolicy{}, prefixPolicy{}, true},
		{"a func", f, f, false},
		{"structs holding slices", holder{[]int{1}}, holder{[]int{1}}, true},
		{"structs holding other slices", holder{[]int{1}}, holder{[]int{2}}, false},
		{"nil and a value", nil, p, false},
		{"two nils", nil, nil, true},
		{"values of two types", prefixPolicy{}, holder{}, false},
	}
	for _, tt := range tests {
		if got := sameInterface(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestADeltaTakesTheOrderItWasGiven: after a delta whose lists came in a new order, the
// base holds them in that order, so the next delta given the same lists finds them in
// order without comparing sets (at 10,000 HTTPRoutes sorting costs milliseconds).
func TestADeltaTakesTheOrderItWasGiven(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "route-matches-refused.in.yaml"))
	cache, versions := NewCache(), newAPIVersions()
	compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
	slices.Reverse(res.HTTPRoutes)
	sni := "reordered.example.com"
	res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
	compareWithCold(t, "routes reversed", cache, versions, res, addrs, opts)
	if cache.deltas != 1 {
		t.Fatalf("%d deltas, want 1", cache.deltas)
	}
	want, _ := deltaInputs(res)
	if got := cache.base.inputs; !reflect.DeepEqual(got, want) {
		t.Fatal("the base keeps the order of the translation before the delta")
	}
}

// TestDeltasFollowOneAnother creates a Backend with its name's first answer, then
// changes a route, then another Backend, deletes the Backend the route uses and changes
// the route again: each is a delta of the one before (the base takes each delta's
// answers and routes, and the route side the deletion re-attached holds one span per
// route), and each equals a cold translation.
func TestDeltasFollowOneAnother(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "fqdn-backend-basic.in.yaml"))
	cache, versions := NewCache(), newAPIVersions()
	compareWithCold(t, "first translation", cache, versions, res, addrs, opts)
	created := res.Backends[0].DeepCopy()
	created.Name, created.UID, created.ResourceVersion, created.Generation = "created", "", "", 0
	created.Spec.Destination.FQDN.Hostname = "created.example.com"
	res.Backends = append(res.Backends, created)
	addrs = maps.Clone(addrs)
	addrs["created.example.com"] = addrs["api.example.com"]
	compareWithCold(t, "a Backend created", cache, versions, res, addrs, opts)
	editRoutePath(rand.New(rand.NewPCG(1, 1)), res)
	compareWithCold(t, "a route changed", cache, versions, res, addrs, opts)
	sni := "edited.example.com"
	res.Backends[0].Spec.Destination.FQDN.TLS = &egressv1alpha1.BackendTLS{ServerName: &sni}
	compareWithCold(t, "a Backend changed", cache, versions, res, addrs, opts)
	res.Backends = res.Backends[1:] // the one the route names
	compareWithCold(t, "the Backend the route uses deleted", cache, versions, res, addrs, opts)
	editRoutePath(rand.New(rand.NewPCG(2, 2)), res)
	compareWithCold(t, "the route changed again", cache, versions, res, addrs, opts)
	if cache.deltas != 5 {
		t.Fatalf("%d deltas, want 5", cache.deltas)
	}
}
