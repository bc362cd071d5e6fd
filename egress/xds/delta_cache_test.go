package xds

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"github.com/envoyproxy/go-control-plane/pkg/server/stream/v3"
	"github.com/go-logr/logr"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/xds/xdstest"
)

// referenceCache is what served delta ADS before deltaCache: go-control-plane's
// snapshot cache, with a name subscribed again shown to it as sent without a version
// (resubscribe.go). The test keeps it as the oracle.
type referenceCache struct{ cachev3.SnapshotCache }

func (c referenceCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	sent := sub.ReturnedResources()
	var forgotten map[string]string
	for _, name := range req.GetResourceNamesSubscribe() {
		_, held := req.GetInitialResourceVersions()[name]
		if v, ok := sent[name]; ok && v != "" && !held {
			if forgotten == nil {
				forgotten = maps.Clone(sent)
			}
			forgotten[name] = ""
		}
	}
	if forgotten != nil {
		sub = forgottenSubscription{Subscription: sub, sent: forgotten}
	}
	return c.SnapshotCache.CreateDeltaWatch(req, sub, out)
}

type forgottenSubscription struct {
	cachev3.Subscription
	sent map[string]string
}

func (s forgottenSubscription) ReturnedResources() map[string]string { return s.sent }

// emulatedStream does for one delta stream what go-control-plane's delta server does:
// it keeps a subscription per type, cancels a type's watch before applying a request,
// opens a new one, and takes each response's map of returned resources once it has
// "sent" it. responses collects what it sent, rendered.
//
// On go-control-plane's cache (oracle set) it also plays the rule of endpoints_due.go,
// independently of deltaCache: the endpoints of the clusters a response carries are
// sent again by the stream's next endpoints answer, and an open endpoints watch is
// answered right after the cluster response (opened again, with those endpoints shown
// to go-control-plane as held with no version).
type emulatedStream struct {
	cache     cachev3.ConfigWatcher
	id        int64
	expect    func(*discoveryv3.DeltaDiscoveryRequest, int64)
	subs      map[string]*stream.Subscription
	cancels   map[string]func()
	open      map[string]bool // a watch was opened and has not answered
	reqs      map[string]*discoveryv3.DeltaDiscoveryRequest
	out       chan cachev3.DeltaResponse
	responses []string
	oracle    bool
	due       map[string]bool
}

func newEmulatedStream(cache cachev3.ConfigWatcher, id int64, expect func(*discoveryv3.DeltaDiscoveryRequest, int64)) *emulatedStream {
	return &emulatedStream{cache: cache, id: id, expect: expect, subs: map[string]*stream.Subscription{},
		cancels: map[string]func(){}, open: map[string]bool{}, reqs: map[string]*discoveryv3.DeltaDiscoveryRequest{},
		out: make(chan cachev3.DeltaResponse, 32), due: map[string]bool{}}
}

// newOracleStream is an emulated stream on go-control-plane's cache.
func newOracleStream(cache cachev3.ConfigWatcher) *emulatedStream {
	e := newEmulatedStream(cache, 1, nil)
	e.oracle = true
	return e
}

func (e *emulatedStream) drain(t testing.TB) {
	for {
		select {
		case resp := <-e.out:
			wire, err := resp.GetDeltaDiscoveryResponse()
			if err != nil {
				t.Fatalf("response: %v", err)
			}
			var sent []string
			for _, r := range wire.GetResources() {
				sent = append(sent, r.GetName()+"@"+r.GetVersion()[:8])
			}
			slices.Sort(sent)
			removed := slices.Sorted(slices.Values(wire.GetRemovedResources()))
			e.responses = append(e.responses, fmt.Sprintf("%s %s sent %v removed %v",
				strings.TrimPrefix(wire.GetTypeUrl(), "type.googleapis.com/"), wire.GetSystemVersionInfo(), sent, removed))
			e.subs[resp.GetDeltaRequest().GetTypeUrl()].SetReturnedResources(resp.GetNextVersionMap())
			e.open[resp.GetDeltaRequest().GetTypeUrl()] = false
			if e.oracle && wire.GetTypeUrl() == resource.ClusterType {
				e.clustersSent(t, wire)
			}
		default:
			return
		}
	}
}

func (e *emulatedStream) request(t testing.TB, req *discoveryv3.DeltaDiscoveryRequest) {
	e.drain(t)
	typeURL := req.GetTypeUrl()
	sub, ok := e.subs[typeURL]
	if !ok {
		s := stream.NewDeltaSubscription(req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe(),
			req.GetInitialResourceVersions(), !slices.Contains(namedOnlyTypes, typeURL))
		sub = &s
		e.subs[typeURL] = sub
	} else {
		if cancel := e.cancels[typeURL]; cancel != nil {
			cancel()
		}
		sub.UpdateResourceSubscriptions(req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe())
	}
	e.reqs[typeURL] = req
	e.watch(t, typeURL)
}

// watch opens the type's watch for its last request.
func (e *emulatedStream) watch(t testing.TB, typeURL string) {
	req := e.reqs[typeURL]
	if e.expect != nil {
		e.expect(req, e.id)
	}
	var sub cachev3.Subscription = *e.subs[typeURL]
	if e.oracle && typeURL == resource.EndpointType && len(e.due) > 0 {
		sent := maps.Clone(sub.ReturnedResources())
		for name := range e.due {
			if _, held := sent[name]; held {
				sent[name] = ""
			}
		}
		clear(e.due)
		sub = forgottenSubscription{Subscription: sub, sent: sent}
	}
	cancel, err := e.cache.CreateDeltaWatch(req, sub, e.out)
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	e.cancels[typeURL], e.open[typeURL] = cancel, true
}

// clustersSent makes due the endpoints of the clusters resp carries and, when the
// endpoints watch is open, answers it again.
func (e *emulatedStream) clustersSent(t testing.TB, resp *discoveryv3.DeltaDiscoveryResponse) {
	for _, r := range resp.GetResources() {
		var c clusterv3.Cluster
		if err := r.GetResource().UnmarshalTo(&c); err != nil {
			t.Fatalf("cluster %s: %v", r.GetName(), err)
		}
		if name, ok := endpointsOf(&c); ok {
			e.due[name] = true
		}
	}
	if cancel := e.cancels[resource.EndpointType]; e.open[resource.EndpointType] && cancel != nil {
		cancel()
		e.watch(t, resource.EndpointType)
	}
}

// cleared notes that the cache dropped the stream's open watches with the snapshot:
// they wait, unanswered, for the stream's next requests.
func (e *emulatedStream) cleared() {
	for typeURL := range e.cancels {
		e.cancels[typeURL] = nil
	}
}

// published answers the stream's open watches from a new snapshot as deltaCache's
// SetSnapshot does: type by type in go-control-plane's ADS order, each once the
// responses before it were sent. The oracle's watches are closed before the snapshot
// is set and opened again here.
func (e *emulatedStream) published(t testing.TB, set func() error) {
	e.drain(t)
	var open []string
	for _, typeURL := range walkTypes {
		if cancel := e.cancels[typeURL]; e.open[typeURL] && cancel != nil {
			cancel()
			e.open[typeURL] = false
			open = append(open, typeURL)
		}

	}
	if err := set(); err != nil {
		t.Fatal(err)
	}
	for _, typeURL := range open {
		e.watch(t, typeURL)
		e.drain(t)
	}
}

// unanswered are the types whose watch has answered and was not opened again.
func (e *emulatedStream) unanswered() []string {
	var out []string
	for _, typeURL := range walkTypes {
		if _, ok := e.subs[typeURL]; ok && !e.open[typeURL] {
			out = append(out, typeURL)
		}
	}
	return out
}

// held is what the stream was sent of every type, for a reconnect.
func (e *emulatedStream) held() map[string]map[string]string {
	out := map[string]map[string]string{}
	for typeURL, sub := range e.subs {
		out[typeURL] = maps.Clone(sub.ReturnedResources())
	}
	return out
}

func (e *emulatedStream) close() {
	for _, cancel := range e.cancels {
		if cancel != nil {
			cancel()
		}
	}
}

var walkTypes = []string{resource.ClusterType, resource.EndpointType, resource.ListenerType, resource.RouteType, resource.SecretType}

// randomRequest is a request an Envoy could send on a stream that already has sub for
// its type (nil: the type's first request).
func randomRequest(r *rand.Rand, typeURL string, sub *stream.Subscription, held map[string]string) *discoveryv3.DeltaDiscoveryRequest {
	req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, Node: &corev3.Node{Id: "envoy", Cluster: testGateway}}
	names := map[string][]string{
		resource.ClusterType:  {"c0", "c1", "c2", "*"},
		resource.EndpointType: {"c0", "c1", "c2", "c3", "c4", "c5", "c6"},
		resource.ListenerType: {"l0", "l1", "*"},
		resource.RouteType:    {"r0", "r1", "r2", "r3"},
		resource.SecretType:   {"k0", "k1", "k2", "a0", "a1", "g0", "x"},
	}[typeURL]
	pick := func() []string {
		var out []string
		for range r.IntN(3) {
			out = append(out, names[r.IntN(len(names))])
		}
		return out
	}
	if sub == nil {
		if !slices.Contains(namedOnlyTypes, typeURL) && r.IntN(2) == 0 {
			req.InitialResourceVersions = held
			return req // legacy wildcard
		}
		req.ResourceNamesSubscribe, req.InitialResourceVersions = pick(), held
		return req
	}
	req.ResponseNonce = "n"
	switch r.IntN(4) {
	case 0:
		req.ResourceNamesSubscribe = pick()
	case 1:
		req.ResourceNamesUnsubscribe = pick()
	case 2:
		req.ResourceNamesSubscribe, req.ResourceNamesUnsubscribe = pick(), pick()
	}
	return req // case 3: an ACK
}

// TestDeltaCacheAnswersAsGoControlPlane drives two emulated Envoys through one random
// walk of publishes, Resends, Removes, requests (subscribing, unsubscribing, switching
// to and from wildcard, ACKs) and reconnects: one on deltaCache, one on
// go-control-plane's snapshot cache given the same snapshots. Every response must be
// the same (resources and their versions, removals, system version), and so must what
// the two streams hold after every step. Eight walks, each from its own seed.
func TestDeltaCacheAnswersAsGoControlPlane(t *testing.T) {
	for seed := range uint64(8) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { walkAgainstGoControlPlane(t, seed) })
	}
}

func walkAgainstGoControlPlane(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 1897))
	ms := &messages{t: t, cert: xdstest.SelfSignedCert(t, "delta"), kept: map[string]any{}}
	model := refModel{clusters: map[string][2]string{}, listeners: map[string][2]string{}}
	model.repair()
	s := New(logr.Discard())
	ref := referenceCache{cachev3.NewSnapshotCache(true, nodeHash{}, nil)}
	ours, theirs := newEmulatedStream(s.cache, 1, s.cache.expect), newOracleStream(ref)
	responses := 0
	for step := range 1500 {
		before := len(ours.responses)
		var action string
		switch k := r.IntN(20); {
		case k < 6:
			action = "publish"
			for range 1 + r.IntN(2) {
				model.mutate(r)
			}
			model.repair()
			if _, _, err := s.Publish(testGateway, ms.resources(model, r.IntN(5) == 0)); err != nil {
				t.Fatalf("step %d: publish: %v", step, err)
			}
			theirs.published(t, func() error { return ref.SetSnapshot(t.Context(), testGateway, s.cache.snapshots[testGateway]) })
		case k == 6:
			action = "resend"
			if _, err := s.Resend(testGateway); err == nil {
				theirs.published(t, func() error { return ref.SetSnapshot(t.Context(), testGateway, s.cache.snapshots[testGateway]) })
			}
		case k == 7 && r.IntN(4) == 0:
			action = "remove"
			s.Remove(testGateway)
			ref.ClearSnapshot(testGateway)
			theirs.cleared()
		case k == 8:
			action = "reconnect"
			held := ours.held()
			ours.close()
			theirs.close()
			s.cache.forgetStream(ours.id)
			responses, before = responses+len(ours.responses)-before, 0
			ours, theirs = newEmulatedStream(s.cache, ours.id+1, s.cache.expect), newOracleStream(ref)
			for _, typeURL := range walkTypes {
				if _, ok := held[typeURL]; ok {
					req := randomRequest(r, typeURL, nil, held[typeURL])
					ours.request(t, req)
					theirs.request(t, proto.Clone(req).(*discoveryv3.DeltaDiscoveryRequest))
				}
			}
		default:
			typeURL := walkTypes[r.IntN(len(walkTypes))]
			if unanswered := ours.unanswered(); len(unanswered) > 0 && r.IntN(4) > 0 {
				typeURL = unanswered[r.IntN(len(unanswered))]
			}
			req := randomRequest(r, typeURL, ours.subs[typeURL], nil)
			action = fmt.Sprintf("request %v (wildcard before: %v)", req, ours.subs[typeURL] != nil && ours.subs[typeURL].IsWildcard())
			ours.request(t, req)
			theirs.request(t, proto.Clone(req).(*discoveryv3.DeltaDiscoveryRequest))
		}
		ours.drain(t)
		theirs.drain(t)
		if !mapsOfMapsEqual(ours.held(), theirs.held()) {
			t.Fatalf("step %d (%s): the streams hold\n%v\nand\n%v", step, action, ours.held(), theirs.held())
		}
		if !slices.Equal(ours.responses, theirs.responses) {
			t.Fatalf("step %d: deltaCache sent\n%s\ngo-control-plane sent\n%s", step, strings.Join(ours.responses[before:], "\n"), strings.Join(theirs.responses[before:], "\n"))
		}
		responses += len(ours.responses) - before
	}
	t.Logf("%d responses, %d answers from a view", responses, s.cache.patches)
	if patched := s.cache.patches; responses < 300 || patched < 300 {
		t.Fatalf("the walk made %d responses and %d answers from a stream's view, want at least 300 of each", responses, patched)
	}
}

func mapsOfMapsEqual(a, b map[string]map[string]string) bool {
	return maps.EqualFunc(a, b, func(x, y map[string]string) bool { return maps.Equal(x, y) })
}

// BenchmarkDeltaStreamFollowsAClusterAdded10000: one Envoy on an incremental stream
// holds 10,000 clusters (wildcard), their endpoints and their secrets (by name). Each
// iteration publishes one cluster more; the Envoy ACKs the clusters, subscribes to the
// new endpoints and secrets and ACKs them, as Envoy does. Served by deltaCache and, to
// compare, by go-control-plane's snapshot cache given the same snapshots (the publish
// is timed in both).
func BenchmarkDeltaStreamFollowsAClusterAdded10000(b *testing.B) {
	for _, cache := range []string{"deltaCache", "go-control-plane"} {
		b.Run(cache, func(b *testing.B) {
			const n = 10000
			res, add := clustersBeside(b, n)
			var names, secrets []string
			for i := range n {
				name := "backend-" + strconv.Itoa(i)
				names, secrets = append(names, name), append(secrets, name+"-cert", name+"-ca")
			}
			s := New(logr.Discard())
			var watcher cachev3.ConfigWatcher = s.cache
			ref := referenceCache{cachev3.NewSnapshotCache(true, nodeHash{}, nil)}
			publish := func() {
				if _, changed, err := s.Publish(testGateway, *res); err != nil || !changed {
					b.Fatal(changed, err)
				}
				if cache != "deltaCache" {
					if err := ref.SetSnapshot(context.Background(), testGateway, s.cache.snapshots[testGateway]); err != nil {
						b.Fatal(err)
					}
				}
			}
			if cache != "deltaCache" {
				watcher = ref
			}
			publish()
			envoy := newEmulatedStream(watcher, 1, s.cache.expect)
			request := func(typeURL, nonce string, subscribe ...string) {
				envoy.request(b, &discoveryv3.DeltaDiscoveryRequest{TypeUrl: typeURL, ResponseNonce: nonce,
					ResourceNamesSubscribe: subscribe, Node: &corev3.Node{Id: "envoy", Cluster: testGateway}})
				envoy.drain(b)
			}
			request(resource.ClusterType, "")
			request(resource.EndpointType, "", names...)
			request(resource.SecretType, "", secrets...)
			for _, typeURL := range []string{resource.ClusterType, resource.EndpointType, resource.SecretType} {
				request(typeURL, "1")
			}
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				name := "new-" + strconv.Itoa(i)
				add(name)
				sent := len(envoy.responses)
				b.StartTimer()
				publish()
				envoy.drain(b)
				request(resource.ClusterType, "1")
				request(resource.EndpointType, "1", name)
				request(resource.SecretType, "1", name+"-cert", name+"-ca")
				request(resource.EndpointType, "1")
				request(resource.SecretType, "1")
				if got := len(envoy.responses) - sent; got != 3 {
					b.Fatalf("%d responses, want 3 (the cluster, its endpoints, its secrets): %v", got, envoy.responses[sent:])
				}
			}
		})
	}
}

// TestDeltaCacheWalksAStreamTooFarBehind: an Envoy that does not answer while more than
// maxChanges snapshots are published is past the history kept; its next request is
// answered by the full walk, with what go-control-plane sends, and the one after from
// its view again.
func TestDeltaCacheWalksAStreamTooFarBehind(t *testing.T) {
	ms := &messages{t: t, cert: xdstest.SelfSignedCert(t, "behind"), kept: map[string]any{}}
	model := refModel{clusters: map[string][2]string{}, listeners: map[string][2]string{}}
	s := New(logr.Discard())
	ref := referenceCache{cachev3.NewSnapshotCache(true, nodeHash{}, nil)}
	publish := func(i int) {
		model.clusters[fmt.Sprintf("c%d", i)] = [2]string{}
		model.repair()
		if _, _, err := s.Publish(testGateway, ms.resources(model, false)); err != nil {
			t.Fatal(err)
		}
		if err := ref.SetSnapshot(t.Context(), testGateway, s.cache.snapshots[testGateway]); err != nil {
			t.Fatal(err)
		}
	}
	ours, theirs := newEmulatedStream(s.cache, 1, s.cache.expect), newEmulatedStream(ref, 1, nil)
	request := func(nonce string) {
		req := &discoveryv3.DeltaDiscoveryRequest{TypeUrl: resource.ClusterType, ResponseNonce: nonce, Node: &corev3.Node{Id: "envoy", Cluster: testGateway}}
		ours.request(t, req)
		theirs.request(t, proto.Clone(req).(*discoveryv3.DeltaDiscoveryRequest))
		ours.drain(t)
		theirs.drain(t)
	}
	publish(0)
	request("")
	request("1")
	publish(1) // answers the open watch from the view, as the ACK was
	if s.cache.patches != 2 {
		t.Fatalf("%d answers from a view after an ACK and a publish, want 2", s.cache.patches)
	}
	for i := 2; i < maxChanges+4; i++ { // the watch answered above is not opened again
		publish(i)
	}
	kept := 0
	for c := changeOf(s.cache.snapshots[testGateway], resource.ClusterType); c != nil; c = c.prev {
		kept++
	}
	if kept > maxChanges+1 {
		t.Errorf("%d steps of history kept after %d publishes, want at most %d", kept, maxChanges+4, maxChanges+1)
	}
	request("2")
	if s.cache.patches != 2 {
		t.Fatalf("%d answers from a view for a stream %d publishes behind, want the full walk", s.cache.patches, maxChanges+2)
	}
	request("3")
	publish(maxChanges + 4)
	if s.cache.patches != 4 {
		t.Fatalf("%d answers from a view after the walk placed the stream, want 4 (its ACK and the publish)", s.cache.patches)
	}
	ours.drain(t)
	theirs.drain(t)
	if !slices.Equal(ours.responses, theirs.responses) || len(ours.responses) != 4 {
		t.Fatalf("deltaCache sent\n%s\ngo-control-plane sent\n%s", strings.Join(ours.responses, "\n"), strings.Join(theirs.responses, "\n"))
	}
}
