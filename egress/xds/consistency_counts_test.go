package xds

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"github.com/go-logr/logr"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// refModel is a small Gateway configuration, by names: clusters (with the client
// certificate and CA secrets they name, or none), listeners (with the route table and
// the certificate they name), and the endpoints, route tables and secrets present.
type refModel struct {
	clusters  map[string][2]string
	listeners map[string][2]string
	endpoints map[string]bool
	routes    map[string]bool
	secrets   map[string]bool
}

// consistent is the model's own answer: every reference resolves and every endpoint
// resource, route table and secret is referenced.
func (m refModel) consistent() bool {
	eps, routes, secrets := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name, s := range m.clusters {
		eps[name] = true
		if s[0] != "" {
			secrets[s[0]], secrets[s[1]] = true, true
		}
	}
	for _, l := range m.listeners {
		routes[l[0]] = true
		if l[1] != "" {
			secrets[l[1]] = true
		}
	}
	return sameSet(eps, m.endpoints) && sameSet(routes, m.routes) && sameSet(secrets, m.secrets)
}

func sameSet(a, b map[string]bool) bool {
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return len(a) == len(b)
}

// mutate changes one thing at random, the same for the same random source; repair then
// makes the model consistent.
func (m *refModel) mutate(r *rand.Rand) {
	pick := func(prefix string, n int) string { return fmt.Sprintf("%s%d", prefix, r.IntN(n)) }
	switch r.IntN(6) {
	case 0:
		name := pick("c", 6)
		if _, ok := m.clusters[name]; ok {
			delete(m.clusters, name)
		} else if r.IntN(2) == 0 {
			m.clusters[name] = [2]string{}
		} else {
			m.clusters[name] = [2]string{pick("k", 3), pick("a", 2)}
		}
	case 1:
		name := pick("l", 3)
		if _, ok := m.listeners[name]; ok {
			delete(m.listeners, name)
		} else {
			m.listeners[name] = [2]string{pick("r", 3), []string{"", "g0", "k0"}[r.IntN(3)]}
		}
	case 2:
		toggle(m.endpoints, pick("c", 7))
	case 3:
		toggle(m.routes, pick("r", 4))
	case 4:
		toggle(m.secrets, []string{"k0", "k1", "k2", "a0", "a1", "g0", "x"}[r.IntN(7)])
	default: // a cluster with secrets changes the secrets it names
		var withSecrets []string
		for _, name := range slices.Sorted(mapKeys(m.clusters)) {
			if m.clusters[name][0] != "" {
				withSecrets = append(withSecrets, name)
			}
		}
		if len(withSecrets) > 0 {
			m.clusters[withSecrets[r.IntN(len(withSecrets))]] = [2]string{pick("k", 3), pick("a", 2)}
		}
	}
}

func toggle(set map[string]bool, name string) {
	if set[name] {
		delete(set, name)
	} else {
		set[name] = true
	}
}

func (m *refModel) repair() {
	m.endpoints, m.routes, m.secrets = map[string]bool{}, map[string]bool{}, map[string]bool{}
	for name, s := range m.clusters {
		m.endpoints[name] = true
		if s[0] != "" {
			m.secrets[s[0]], m.secrets[s[1]] = true, true
		}
	}
	for _, l := range m.listeners {
		m.routes[l[0]] = true
		if l[1] != "" {
			m.secrets[l[1]] = true
		}
	}
}

// messages builds the model's resources, taking a message from kept when one was built
// for the same thing (the same pointer, as the builders keep unchanged messages) unless
// fresh says to build everything anew.
type messages struct {
	t    testing.TB
	cert xdstest.Cert
	kept map[string]any
}

func (ms *messages) get(key string, fresh bool, build func() any) any {
	if m, ok := ms.kept[key]; ok && !fresh {
		return m
	}
	m := build()
	ms.kept[key] = m
	return m
}

func (ms *messages) resources(m refModel, fresh bool) envoyconfig.Resources {
	var res envoyconfig.Resources
	for _, name := range slices.Sorted(mapKeys(m.clusters)) {
		s := m.clusters[name]
		res.Clusters = append(res.Clusters, ms.get(fmt.Sprint("cluster", name, s), fresh, func() any {
			return edsCluster(ms.t, name, s[0], s[1])
		}).(*clusterv3.Cluster))
	}
	for _, name := range slices.Sorted(mapKeys(m.listeners)) {
		l := m.listeners[name]
		port := uint32(20000 + len(res.Listeners))
		res.Listeners = append(res.Listeners, ms.get(fmt.Sprint("listener", name, l, port), fresh, func() any {
			return httpListener(ms.t, name, port, l[0], l[1])
		}).(*listenerv3.Listener))
	}
	for _, name := range slices.Sorted(mapKeys(m.endpoints)) {
		res.Endpoints = append(res.Endpoints, ms.get("endpoints"+name, fresh, func() any {
			return endpoints(name, 8080)
		}).(*endpointv3.ClusterLoadAssignment))
	}
	for _, name := range slices.Sorted(mapKeys(m.routes)) {
		res.Routes = append(res.Routes, ms.get("route"+name, fresh, func() any {
			return directRoute(name, "body")
		}).(*routev3.RouteConfiguration))
	}
	for _, name := range slices.Sorted(mapKeys(m.secrets)) {
		res.Secrets = append(res.Secrets, ms.get("secret"+name, fresh, func() any {
			if name[0] == 'a' {
				return caSecret(name, ms.cert)
			}
			return certSecret(name, ms.cert)
		}).(*tlsv3.Secret))
	}
	return res
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// TestCountedConsistencyAgreesWithTheModel publishes a random walk of configurations,
// about half of them inconsistent, through one server (whose check counts from the
// last snapshot it published) and each through a new server (whose check counts from
// nothing): both must refuse exactly the configurations the model calls inconsistent,
// with the same message, and publish the others under the same version.
func TestCountedConsistencyAgreesWithTheModel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 1897))
	ms := &messages{t: t, cert: xdstest.SelfSignedCert(t, "refs"), kept: map[string]any{}}
	model := refModel{clusters: map[string][2]string{}, listeners: map[string][2]string{}}
	model.repair()
	counted := New(logr.Discard())
	var refused, published int
	for step := range 400 {
		for range 1 + r.IntN(3) {
			model.mutate(r)
		}
		if r.IntN(2) == 0 {
			model.repair()
		}
		res := ms.resources(model, r.IntN(5) == 0)
		v1, _, err1 := counted.Publish(testGateway, res)
		v2, _, err2 := New(logr.Discard()).Publish(testGateway, res)
		if (err1 == nil) != model.consistent() {
			t.Fatalf("step %d: publish over the last snapshot: %v; the model says consistent=%v (%+v)", step, err1, model.consistent(), model)
		}
		if fmt.Sprint(err1) != fmt.Sprint(err2) || v1 != v2 {
			t.Fatalf("step %d: over the last snapshot %q, %v; from nothing %q, %v", step, v1, err1, v2, err2)
		}
		if err1 != nil {
			refused++
		} else {
			published++
		}
	}
	if refused < 50 || published < 50 {
		t.Fatalf("the walk refused %d and published %d configurations, want at least 50 of each", refused, published)
	}
}
