package translate

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
	gwapixv1alpha1 "sigs.k8s.io/gateway-api/apisx/v1alpha1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// compareWithCold translates with the shared cache and with a cold one (on a deep copy
// of the input) and fails unless the two results are identical Go values. Before
// translating, versions gives every Backend, Secret and ConfigMap the identity the API
// server would: a new version whenever its content changed.
func compareWithCold(t *testing.T, step string, cache *Cache, versions *apiVersions, res *egress.Resources, addrs egress.Addresses, opts Options) Result {
	t.Helper()
	versions.assign(t, res)
	opts.Cache = cache
	got := Translate(res, versions.answers(t, addrs), opts)
	opts.Cache = NewCache()
	want := Translate(res.DeepCopy(), addrs, opts)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: the translation with a warm cache differs from a cold one:\n%s\nwant:\n%s", step, renderResult(t, got), renderResult(t, want))
	}
	versions.results.check(t, step)
	versions.results.keep(t, got)
	return got
}

// returnedResults are the results a Cache returned in one sequence of translations, each
// with what it said when returned. Results share memory with later ones (the build
// cache keeps their IR and compares the next build's with it), so no translation may
// change what an earlier one returned.
type returnedResults []returnedResult

type returnedResult struct {
	r    Result
	json []byte
}

func (rs *returnedResults) keep(t *testing.T, r Result) {
	t.Helper()
	*rs = append(*rs, returnedResult{r: r, json: resultJSON(t, r)})
}

// check fails when an earlier result no longer says what it said when returned.
func (rs returnedResults) check(t *testing.T, step string) {
	t.Helper()
	for i, kept := range rs {
		if now := resultJSON(t, kept.r); !bytes.Equal(now, kept.json) {
			t.Fatalf("%s: the result of translation %d changed after it was returned:\n%s\nwas:\n%s", step, i+1, now, kept.json)
		}
	}
}

func resultJSON(t *testing.T, r Result) []byte {
	t.Helper()
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// apiVersions versions objects as the API server does: an object keeps its UID, and
// gets a new resourceVersion whenever anything in it changes and, for the kinds with a
// spec (Backends, the Gateway API's), a new generation whenever its spec changes.
type apiVersions struct {
	next        int
	content     map[string]string // kind/namespace/name (and "spec" for a generation) → JSON
	generations map[string]int64  // kind/namespace/name → generation
	// addrs is the answer map last handed out and what it said, as the DNS guard hands
	// out one map until an answer changes (Options).
	addrs     egress.Addresses
	addrsJSON string
	// results are the results of the sequence so far (compareWithCold).
	results returnedResults
}

func newAPIVersions() *apiVersions {
	return &apiVersions{content: map[string]string{}, generations: map[string]int64{}}
}

func (v *apiVersions) assign(t *testing.T, res *egress.Resources) {
	t.Helper()
	for _, b := range res.Backends {
		versionSpec(t, v, "Backend", b, b.Spec)
	}
	for _, r := range res.HTTPRoutes {
		versionSpec(t, v, "HTTPRoute", r, r.Spec)
	}
	versionSpecs(t, v, "GatewayClass", res.GatewayClasses, func(o *gwapiv1.GatewayClass) any { return o.Spec })
	versionSpecs(t, v, "Gateway", res.Gateways, func(o *gwapiv1.Gateway) any { return o.Spec })
	versionSpecs(t, v, "TLSRoute", res.TLSRoutes, func(o *gwapiv1.TLSRoute) any { return o.Spec })
	versionSpecs(t, v, "TCPRoute", res.TCPRoutes, func(o *gwapiv1.TCPRoute) any { return o.Spec })
	versionSpecs(t, v, "BackendTLSPolicy", res.BackendTLSPolicies, func(o *gwapiv1.BackendTLSPolicy) any { return o.Spec })
	versionSpecs(t, v, "XBackend", res.XBackends, func(o *gwapixv1alpha1.XBackend) any { return o.Spec })
	versionAll(t, v, "ReferenceGrant", res.ReferenceGrants)
	versionAll(t, v, "Secret", res.Secrets)
	versionAll(t, v, "ConfigMap", res.ConfigMaps)
	versionAll(t, v, "Service", res.Services)
	versionAll(t, v, "EndpointSlice", res.EndpointSlices)
	versionAll(t, v, "Namespace", res.Namespaces)
}

// versionSpecs versions every object of a kind with a spec: a generation by its spec,
// a resourceVersion by its whole content.
func versionSpecs[T any, P interface {
	*T
	metav1.Object
}](t *testing.T, v *apiVersions, kind string, objs []T, spec func(P) any) {
	t.Helper()
	for i := range objs {
		o := P(&objs[i])
		versionSpec(t, v, kind, o, spec(o))
	}
}

// versionSpec versions one object by its spec.
func versionSpec(t *testing.T, v *apiVersions, kind string, o metav1.Object, spec any) {
	t.Helper()
	o.SetGeneration(v.generation(t, kind, o, spec))
	v.version(t, kind, o, o)
}

// versionAll versions every object of a kind by its whole content.
func versionAll[T any, P interface {
	*T
	metav1.Object
}](t *testing.T, v *apiVersions, kind string, objs []T) {
	t.Helper()
	for i := range objs {
		v.version(t, kind, P(&objs[i]), P(&objs[i]))
	}
}

// answers returns the answer map last handed out while addrs says the same, else a
// copy of addrs: tests edit one map in place, the DNS guard never does.
func (v *apiVersions) answers(t *testing.T, addrs egress.Addresses) egress.Addresses {
	t.Helper()
	raw, err := json.Marshal(addrs)
	if err != nil {
		t.Fatal(err)
	}
	if v.addrs == nil || string(raw) != v.addrsJSON {
		v.addrs, v.addrsJSON = maps.Clone(addrs), string(raw)
	}
	return v.addrs
}

// generation is o's generation: a new one whenever spec differs from the last seen.
func (v *apiVersions) generation(t *testing.T, kind string, o metav1.Object, spec any) int64 {
	t.Helper()
	name := kind + "/" + o.GetNamespace() + "/" + o.GetName()
	if v.changed(t, kind+"/spec", o, spec) {
		v.generations[name]++
	}
	return v.generations[name]
}

// version sets o's UID and, when the content differs from the last seen, a new
// resourceVersion.
func (v *apiVersions) version(t *testing.T, kind string, o metav1.Object, content any) {
	t.Helper()
	o.SetUID(types.UID(kind + "/" + o.GetNamespace() + "/" + o.GetName()))
	rv := o.GetResourceVersion()
	o.SetResourceVersion("") // the version is not content
	if v.changed(t, kind, o, content) || rv == "" {
		v.next++
		rv = strconv.Itoa(v.next)
	}
	o.SetResourceVersion(rv)
}

func (v *apiVersions) changed(t *testing.T, kind string, o metav1.Object, content any) bool {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	key := kind + "/" + o.GetNamespace() + "/" + o.GetName()
	was, seen := v.content[key]
	v.content[key] = string(raw)
	return !seen || was != string(raw)
}

// TestCachedTranslationEqualsColdOnGoldenInputs translates every golden input, twice
// over, with one Cache: inputs reuse the same object names with other content.
func TestCachedTranslationEqualsColdOnGoldenInputs(t *testing.T) {
	cache, versions := NewCache(), newAPIVersions()
	for pass := range 2 {
		for _, in := range goldenInputs(t) {
			res, addrs, opts := loadGoldenInput(t, in)
			compareWithCold(t, filepath.Base(in)+" pass "+string(rune('1'+pass)), cache, versions, res, addrs, opts)
		}
	}
}

// TestCachedTranslationFollowsEveryInput changes, one step after the other, everything
// an FQDN Backend's translation reads, and compares with a cold translation each time.
func TestCachedTranslationFollowsEveryInput(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	client := findSecret(t, res, "client")
	goodKey := client.Data[corev1.TLSPrivateKeyKey]
	otherCA, err := os.ReadFile(filepath.Join("testdata", "certs", "gateway.crt"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name string
		edit func()
		// usable is whether the Backend's translation is expected to succeed.
		usable bool
	}{
		{"unchanged", func() {}, true},
		{"unchanged again", func() {}, true},
		{"the DNS guard vets another address", func() {
			addrs["api.example.com"] = egress.Resolution{State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("203.0.113.99")}}}
		}, true},
		{"the answer goes stale, with the same addresses", func() {
			r := addrs["api.example.com"]
			r.State, r.Message = egress.ResolutionStale, "SERVFAIL from every upstream"
			addrs["api.example.com"] = r
		}, true},
		{"the guard also blocks an answer", func() {
			r := addrs["api.example.com"]
			r.State, r.Message = egress.ResolutionResolved, ""
			r.Blocked = []egress.BlockedAddress{{IP: netip.MustParseAddr("10.0.0.7"), Reason: "private"}}
			addrs["api.example.com"] = r
		}, true},
		{"the server name changes", func() { s := "gw2.partner.example"; res.Backends[0].Spec.Destination.FQDN.TLS.ServerName = &s }, true},
		{"only the Backend's labels change", func() { res.Backends[0].Labels = map[string]string{"team": "payments"} }, true},
		{"the CA ConfigMap holds another CA", func() { res.ConfigMaps[0].Data["ca.crt"] = string(otherCA) }, true},
		{"the client key is replaced by garbage", func() { client.Data[corev1.TLSPrivateKeyKey] = []byte("garbage") }, false},
		{"the client key is restored", func() { client.Data[corev1.TLSPrivateKeyKey] = goodKey }, true},
		{"the clock passes the certificate's expiry", func() { opts.Now = time.Date(2127, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"the clock is before the certificate's start", func() { opts.Now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }, false},
		{"the clock is back", func() { opts.Now = time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) }, true},
		{"the client Secret becomes Opaque", func() { client.Type = corev1.SecretTypeOpaque }, false},
		{"the client Secret is kubernetes.io/tls again", func() { client.Type = corev1.SecretTypeTLS }, true},
		{"the CA Secret loses its key", func() { delete(findSecret(t, res, "partner-ca-next").Data, "bundle.pem") }, false},
		{"the CA Secret gets it back", func() { findSecret(t, res, "partner-ca-next").Data["bundle.pem"] = otherCA }, true},
		{"the DNS guard forgets the name", func() { delete(addrs, "api.example.com") }, true},
	}
	cache, versions := NewCache(), newAPIVersions()
	for _, step := range steps {
		step.edit()
		got := compareWithCold(t, step.name, cache, versions, res, addrs, opts)
		if usable := len(got.Gateways) == 1 && len(got.Gateways[0].Clusters) == 1; usable != step.usable {
			t.Fatalf("%s: the Backend is usable: %v, want %v", step.name, usable, step.usable)
		}
	}
}

// TestCachedTranslationFollowsTheAddressPolicy flips the policy IP destinations are
// vetted against.
func TestCachedTranslationFollowsTheAddressPolicy(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-ip-destinations.in.yaml"))
	denyDocs := prefixPolicy{netip.MustParsePrefix("203.0.113.0/24")}
	cache, versions := NewCache(), newAPIVersions()
	for _, policy := range []egress.AddressPolicy{opts.AddressPolicy, nil, denyDocs, opts.AddressPolicy, prefixPolicy{}} {
		opts.AddressPolicy = policy
		compareWithCold(t, "policy", cache, versions, res, addrs, opts)
	}
}

// TestCachedTranslationReusesBackends proves the unit is used: the second and third
// translations of the same versioned input hand out the very cluster settings the first
// computed, which the unit keeps without a copy.
func TestCachedTranslationReusesBackends(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	newAPIVersions().assign(t, res)
	opts.Cache = NewCache()
	var tls [3]any
	for i := range tls {
		res.Gateways[0].Annotations = map[string]string{"example.com/touched": strconv.Itoa(i)} // another input changed: no delta
		r := Translate(res, addrs, opts)
		tls[i] = r.Gateways[0].Clusters[0].TLS
	}
	if tls[0] != tls[1] || tls[1] != tls[2] {
		t.Error("a later translation built the Backend afresh")
	}
}

// TestUnversionedInputsAreNeverKept translates, with one Cache, inputs whose objects
// have no identity (files given to `portcullis translate`): nothing is kept, so an
// object edited in place between translations is read afresh.
func TestUnversionedInputsAreNeverKept(t *testing.T) {
	for _, tt := range []struct {
		name  string
		strip func(*egress.Resources)
	}{
		{"no versions at all", func(*egress.Resources) {}},
		{"the Backend has no generation", func(res *egress.Resources) {
			newAPIVersions().assign(t, res)
			res.Backends[0].Generation = 0
		}},
		{"the client Secret has no resourceVersion", func(res *egress.Resources) {
			newAPIVersions().assign(t, res)
			findSecret(t, res, "client").ResourceVersion = ""
		}},
		{"the CA ConfigMap has no resourceVersion", func(res *egress.Resources) {
			newAPIVersions().assign(t, res)
			res.ConfigMaps[0].ResourceVersion = ""
		}},
		{"the Backend has a generation but no UID", func(res *egress.Resources) {
			newAPIVersions().assign(t, res)
			res.Backends[0].UID = ""
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
			tt.strip(res)
			opts.Cache = NewCache()
			requireServerNameAfter(t, res, addrs, opts, "edited.partner.example", func() {
				if n := opts.Cache.backendCount(); n != 0 {
					t.Fatalf("the Cache kept %d Backend units of inputs without identity", n)
				}
			})
		})
	}
}

// TestCacheForgetsWhatIsNoLongerUsed translates a cluster, then an empty one twice: the
// Backend and certificate entries are dropped.
func TestCacheForgetsWhatIsNoLongerUsed(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	newAPIVersions().assign(t, res)
	opts.Cache = NewCache()
	Translate(res, addrs, opts)
	if len(opts.Cache.backends) == 0 || len(opts.Cache.pairs) == 0 || len(opts.Cache.bundles) == 0 {
		t.Fatalf("nothing was cached: %d Backends, %d key pairs, %d bundles", len(opts.Cache.backends), len(opts.Cache.pairs), len(opts.Cache.bundles))
	}
	for i := range 2 {
		// An object without identity: no delta can be told from it, so each translation
		// runs in full, and only a full translation sweeps the Cache.
		unversioned := &egress.Resources{Namespaces: []corev1.Namespace{{ObjectMeta: metav1.ObjectMeta{Name: "ns" + strconv.Itoa(i)}}}}
		Translate(unversioned, egress.Addresses{}, opts)
	}
	if n := len(opts.Cache.backends) + len(opts.Cache.pairs) + len(opts.Cache.bundles); n != 0 {
		t.Errorf("%d entries are still cached after two translations that used none", n)
	}
}

func findSecret(t *testing.T, res *egress.Resources, name string) *corev1.Secret {
	t.Helper()
	for i := range res.Secrets {
		if res.Secrets[i].Name == name {
			return &res.Secrets[i]
		}
	}
	t.Fatalf("no Secret %s", name)
	return nil
}

// TestRecreatedBackendIsTranslatedAfresh deletes a Backend and creates another of the
// same name: generation 1 again, another spec, another UID. The unit of the first must
// not stand for the second.
func TestRecreatedBackendIsTranslatedAfresh(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	newAPIVersions().assign(t, res)
	res.Backends[0].Generation = 1
	opts.Cache = NewCache()
	requireServerNameAfter(t, res, addrs, opts, "recreated.partner.example", func() { res.Backends[0].UID += "-recreated" })
}

// requireServerNameAfter translates, runs between, sets the first Backend's server name
// to sni in place and translates again: the second translation must send sni.
func requireServerNameAfter(t *testing.T, res *egress.Resources, addrs egress.Addresses, opts Options, sni string, between func()) {
	t.Helper()
	first := Translate(res, addrs, opts)
	between()
	res.Backends[0].Spec.Destination.FQDN.TLS.ServerName = &sni
	second := Translate(res, addrs, opts)
	if got := second.Gateways[0].Clusters[0].TLS.SNI; got != sni || first.Gateways[0].Clusters[0].TLS.SNI == sni {
		t.Errorf("server name after the edit: %q, want %q", got, sni)
	}
}

// TestUnchangedBackendKeepsItsStatus: a unit Backend whose unit, routes and DNS answer
// are unchanged gets the very status of the last translation (the status writer
// compares pointers first); once no route references it, a new status says so.
func TestUnchangedBackendKeepsItsStatus(t *testing.T) {
	res, addrs, opts := loadGoldenInput(t, filepath.Join("testdata", "backend-private-ca-sans-mtls.in.yaml"))
	newAPIVersions().assign(t, res)
	opts.Cache = NewCache()
	key := res.Backends[0].Namespace + "/" + res.Backends[0].Name
	first := Translate(res, addrs, opts).Statuses.Backends[key]
	second := Translate(res, addrs, opts).Statuses.Backends[key]
	if first != second {
		t.Error("an unchanged Backend got a new status")
	}
	res.HTTPRoutes = nil
	third := Translate(res, addrs, opts).Statuses.Backends[key]
	if third == second {
		t.Fatal("the Backend kept its status after its only route went")
	}
	if c := findCondition(third.Conditions, egressv1alpha1.ConditionProgrammed); c == nil || c.Reason != egressv1alpha1.ReasonNotReferenced {
		t.Errorf("Programmed after the route went: %+v, want reason %s", c, egressv1alpha1.ReasonNotReferenced)
	}
}
