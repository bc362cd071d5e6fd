package xds

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"sync"

	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	"google.golang.org/protobuf/types/known/anypb"
)

// deltaCache serves incremental (delta) ADS itself and leaves state-of-the-world ADS to
// go-control-plane's snapshot cache, which it wraps and keeps the snapshots in.
//
// go-control-plane v0.14.0 (the newest the proxy holds) answers each delta request, an
// ACK included, and each publish to an open watch by walking every resource of the
// type and building a new map of every name the stream holds: at 10,000 Backends, two
// 10,000-entry maps per Envoy and changed type for every change, 60-90 ms of the
// manager's CPU per create in the first-200 benchmark. Publish knows which names a
// type's new versions touch (versionChange), and deltaCache knows, per stream and
// type, which published versions the stream's map of what it was sent (the returned
// resources that go-control-plane's delta server keeps) is up to date with. So it looks
// at those names only, plus the names the request subscribes or unsubscribes, and
// updates that map in place. A stream it cannot place (a new stream, a switch to or
// from wildcard, more than maxChanges publishes behind, a snapshot from Resend, which
// changes every version, a map left with names only a response takes out) gets the full
// walk, with go-control-plane's rules.
//
// The map is the stream's and the server's stream goroutine changes it when a request
// comes (UpdateResourceSubscriptions), but only after cancelling the type's watch,
// which takes mu: deltaCache writes it only while the watch is open, under mu, or on
// that goroutine during CreateDeltaWatch.
type deltaCache struct {
	cachev3.SnapshotCache

	mu sync.Mutex
	// snapshots, by gateway (node hash), are the wrapped cache's too, kept under mu so
	// that a new watch never sees a snapshot whose SetSnapshot has not yet answered the
	// open watches (the wrapped cache's lock is not mu).
	snapshots map[string]cachev3.ResourceSnapshot
	watches   map[string]map[int64]*deltaWatch // by gateway, then watch number
	lastWatch int64
	// requests are the stream each request comes on, from OnStreamDeltaRequest until
	// CreateDeltaWatch takes it: go-control-plane does not pass the stream to the cache.
	requests map[*discoveryv3.DeltaDiscoveryRequest]int64
	// views are, per stream and type URL, what the stream's returned map is up to date with.
	views map[int64]map[string]deltaView
	// due are, per stream, the endpoints to send whatever the stream was sent before
	// (endpoints_due.go).
	due map[int64]map[string]bool
	// patches counts the answers made from a view rather than a full walk (for tests).
	patches int
}

// deltaWatch is a request waiting for a snapshot that changes what it subscribes to.
type deltaWatch struct {
	stream int64
	req    *cachev3.DeltaRequest
	sub    cachev3.Subscription
	out    chan cachev3.DeltaResponse
}

// deltaView says that sent, a stream's returned map, holds exactly what the full walk
// would make it for the published versions at (and the subscription as it was, wildcard
// or not).
type deltaView struct {
	sent     map[string]string
	at       *versionChange
	wildcard bool
}

// versionChange is one step in the history of a type's published versions: names are
// the resources whose version may differ from the step before (prev). A type's first
// versions, and versions all made anew (a new salt), start a history (prev nil).
type versionChange struct {
	prev  *versionChange
	names []string
}

// maxChanges bounds the history kept per type: a stream further behind is walked in full.
const maxChanges = 16

func nextChange(base *typeResources, dirty, removed []string) *versionChange {
	c := &versionChange{names: slices.Concat(dirty, removed)}
	if base != nil {
		c.prev = base.change
	}
	return c
}

func newDeltaCache(inner cachev3.SnapshotCache) *deltaCache {
	return &deltaCache{
		SnapshotCache: inner,
		snapshots:     map[string]cachev3.ResourceSnapshot{},
		watches:       map[string]map[int64]*deltaWatch{},
		requests:      map[*discoveryv3.DeltaDiscoveryRequest]int64{},
		views:         map[int64]map[string]deltaView{},
		due:           map[int64]map[string]bool{},
	}
}

// expect notes that req came on stream; the delta server calls CreateDeltaWatch with
// it next, on the same goroutine.
func (c *deltaCache) expect(req *discoveryv3.DeltaDiscoveryRequest, stream int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests[req] = stream
}

// forgetStream drops what was kept about a closed stream.
func (c *deltaCache) forgetStream(stream int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.views, stream)
	delete(c.due, stream)
	for req, id := range c.requests {
		if id == stream {
			delete(c.requests, req)
		}
	}
}

// CreateDeltaWatch answers req at once when the gateway's snapshot changes something
// the stream subscribes to, and otherwise waits for a snapshot that does.
func (c *deltaCache) CreateDeltaWatch(req *cachev3.DeltaRequest, sub cachev3.Subscription, out chan cachev3.DeltaResponse) (func(), error) {
	gateway := nodeHash{}.ID(req.GetNode())
	c.mu.Lock()
	defer c.mu.Unlock()
	stream := c.requests[req]
	delete(c.requests, req)
	if snap := c.snapshots[gateway]; snap != nil {
		if resp := c.answerLocked(context.Background(), snap, stream, req, sub); resp != nil {
			out <- resp // the server's channel has room for a response of every type
			if req.GetTypeUrl() == resource.ClusterType {
				c.answerDueLocked(gateway, stream, snap)
			}
			return nil, nil
		}
	}
	c.lastWatch++
	id := c.lastWatch
	if c.watches[gateway] == nil {
		c.watches[gateway] = map[int64]*deltaWatch{}
	}
	c.watches[gateway][id] = &deltaWatch{stream: stream, req: req, sub: sub, out: out}
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.watches[gateway], id)
	}, nil
}

// SetSnapshot publishes snap to both caches and answers the open delta watches it
// changes something for, in go-control-plane's ADS type order.
func (c *deltaCache) SetSnapshot(ctx context.Context, gateway string, snap cachev3.ResourceSnapshot) error {
	if err := c.SnapshotCache.SetSnapshot(ctx, gateway, snap); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.snapshots[gateway] = snap
	trimChanges(snap)
	watches := c.watches[gateway]
	for _, id := range orderedWatches(watches) {
		w := watches[id]
		resp := c.answerLocked(ctx, snap, w.stream, w.req, w.sub)
		if resp == nil {
			continue
		}
		delete(watches, id)
		select {
		case w.out <- resp:
		case <-ctx.Done():
			return context.Canceled
		}
	}
	return nil
}

// ClearSnapshot forgets gateway's snapshot and, as go-control-plane does, its open
// watches: their Envoys get a snapshot after their next request.
func (c *deltaCache) ClearSnapshot(gateway string) {
	c.SnapshotCache.ClearSnapshot(gateway)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.snapshots, gateway)
	delete(c.watches, gateway)
}

// orderedWatches are the watch numbers by type (go-control-plane's ADS order: clusters,
// endpoints, listeners, routes, then the rest, secrets among them), then by number.
func orderedWatches(watches map[int64]*deltaWatch) []int64 {
	ids := make([]int64, 0, len(watches))
	for id := range watches {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int64) int {
		ta, tb := cachev3.GetResponseType(watches[a].req.GetTypeUrl()), cachev3.GetResponseType(watches[b].req.GetTypeUrl())
		if ta != tb {
			return int(ta) - int(tb)
		}
		return int(a - b)
	})
	return ids
}

// trimChanges cuts the history of each type of snap after maxChanges steps, so that
// old steps can be collected.
func trimChanges(snap cachev3.ResourceSnapshot) {
	served, ok := snap.(*servedSnapshot)
	if !ok {
		return
	}
	for _, c := range served.changes {
		for i := 0; i < maxChanges && c != nil; i++ {
			c = c.prev
		}
		if c != nil {
			c.prev = nil
		}
	}
}

// changeOf is the last step of typeURL's history in snap; nil when snap has none.
func changeOf(snap cachev3.ResourceSnapshot, typeURL string) *versionChange {
	if served, ok := snap.(*servedSnapshot); ok {
		return served.changes[typeURL]
	}
	return nil
}

// answerLocked is the response to a watch (stream, req, sub) from snap, nil when it
// has nothing to say; it brings the stream's view up to date either way.
func (c *deltaCache) answerLocked(ctx context.Context, snap cachev3.ResourceSnapshot, stream int64, req *cachev3.DeltaRequest, sub cachev3.Subscription) *deltaResponse {
	typeURL := req.GetTypeUrl()
	in := deltaInput{items: itemsOf(snap, typeURL), sub: sub}
	sent := sub.ReturnedResources()
	in.forgotten = forgottenNames(req, sent)
	var due []string
	if typeURL == resource.EndpointType {
		due = c.takeDueLocked(stream)
		in.forgotten = withDue(in.forgotten, due)
	}
	at := changeOf(snap, typeURL)
	view, known := c.views[stream][typeURL]
	var d deltaResult
	if names, ok := view.since(at, sent, sub.IsWildcard()); known && stream != 0 && ok {
		d = in.patch(sent, slices.Concat(names, req.GetResourceNamesSubscribe(), req.GetResourceNamesUnsubscribe(), due))
		c.patches++
	} else {
		d = in.walk(sent)
	}
	respond := len(d.send) > 0 || len(d.removed) > 0 || (sub.IsWildcard() && req.GetResponseNonce() == "")
	if respond {
		for _, name := range d.quiet {
			delete(d.next, name)
		}
	}
	c.placeLocked(stream, typeURL, d, sent, at, sub.IsWildcard(), respond)
	if !respond {
		return nil
	}
	if typeURL == resource.ClusterType {
		c.noteClustersSentLocked(stream, d.send, in.items)
	}
	return newDeltaResponse(ctx, req, snap.GetVersion(typeURL), d, in.items)
}

// placeLocked records the stream's view after d: d's map once the response is sent;
// sent when no response is and it holds what d would have made it. A map that keeps
// names no response took out (d.quiet: go-control-plane drops them from the map only
// with a response) is not a view: the next answer walks.
func (c *deltaCache) placeLocked(stream int64, typeURL string, d deltaResult, sent map[string]string, at *versionChange, wildcard, respond bool) {
	if stream == 0 {
		return
	}
	if c.views[stream] == nil {
		c.views[stream] = map[string]deltaView{}
	}
	switch {
	case at == nil, !respond && len(d.quiet) > 0:
		delete(c.views[stream], typeURL)
	case respond || sameMap(d.next, sent):
		c.views[stream][typeURL] = deltaView{sent: d.next, at: at, wildcard: wildcard}
	case maps.Equal(d.next, sent):
		c.views[stream][typeURL] = deltaView{sent: sent, at: at, wildcard: wildcard}
	default:
		delete(c.views[stream], typeURL)
	}
}

// since lists the names whose versions may have changed between v and at, when v is
// the view of sent (the very map) with the same kind of subscription and at most
// maxChanges steps behind at.
func (v deltaView) since(at *versionChange, sent map[string]string, wildcard bool) ([]string, bool) {
	if v.at == nil || at == nil || v.wildcard != wildcard || !sameMap(v.sent, sent) {
		return nil, false
	}
	var names []string
	for step, n := at, 0; step != v.at; step, n = step.prev, n+1 {
		if step == nil || n == maxChanges {
			return nil, false
		}
		names = append(names, step.names...)
	}
	return names, true
}

// sameMap tells whether a and b are one map (not two equal ones).
func sameMap(a, b map[string]string) bool {
	return a != nil && b != nil && reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// deltaInput is what a response is made from: a type's resources and versions in the
// snapshot, the stream's subscription, and the names Envoy subscribed to again
// (resubscribe.go), which it is sent whatever it was sent before.
type deltaInput struct {
	items     typeItems
	sub       cachev3.Subscription
	forgotten map[string]bool
}

// deltaResult is a response's content (names to send, names removed) and the stream's
// returned map once it is applied, less quiet: names patch found in the map that the
// stream no longer subscribes to, which leave it only with a response.
type deltaResult struct {
	send, removed, quiet []string
	next                 map[string]string
}

// sentVersion is the version the stream holds of name as far as the server knows.
func (in deltaInput) sentVersion(sent map[string]string, name string) (string, bool) {
	v, found := sent[name]
	if found && in.forgotten[name] {
		v = ""
	}
	return v, found
}

// walk is go-control-plane's createDeltaResponse: every resource of a wildcard
// subscription or every subscribed name, into a new map.
func (in deltaInput) walk(sent map[string]string) deltaResult {
	var d deltaResult
	if in.sub.IsWildcard() {
		d.next = make(map[string]string, in.items.size())
		in.items.each(func(name, v string) {
			d.next[name] = v
			if prev, found := in.sentVersion(sent, name); !found || prev != v {
				d.send = append(d.send, name)
			}
		})
		for name := range sent {
			if _, ok := d.next[name]; !ok {
				d.removed = append(d.removed, name)
			}
		}
	} else {
		d.next = make(map[string]string, len(in.sub.SubscribedResources()))
		for name := range in.sub.SubscribedResources() {
			prev, found := in.sentVersion(sent, name)
			if _, v, ok := in.items.lookup(name); ok {
				if prev != v {
					d.send = append(d.send, name)
				}
				d.next[name] = v
			} else if found {
				d.removed = append(d.removed, name)
			}
		}
	}
	slices.Sort(d.send)
	slices.Sort(d.removed)
	return d
}

// patch is walk for a stream whose map sent is up to date except for names: it decides
// each of them by walk's rules and updates sent in place (but for d.quiet).
func (in deltaInput) patch(sent map[string]string, names []string) deltaResult {
	d := deltaResult{next: sent}
	slices.Sort(names)
	for _, name := range slices.Compact(names) {
		_, subscribed := in.sub.SubscribedResources()[name]
		wanted := in.sub.IsWildcard() || subscribed
		prev, found := in.sentVersion(sent, name)
		_, v, present := in.items.lookup(name)
		switch {
		case present && wanted:
			if (in.sub.IsWildcard() && !found) || prev != v {
				d.send = append(d.send, name)
			}
			sent[name] = v
		case found && wanted:
			d.removed = append(d.removed, name)
			delete(sent, name)
		case found:
			d.quiet = append(d.quiet, name)
		}
	}
	return d
}

// deltaResponse is a delta response made by deltaCache; its resources are encoded on
// the stream's goroutine, when the server sends it.
type deltaResponse struct {
	ctx     context.Context
	req     *cachev3.DeltaRequest
	version string
	next    map[string]string
	wire    func() (*discoveryv3.DeltaDiscoveryResponse, error)
}

var _ cachev3.DeltaResponse = (*deltaResponse)(nil)

func newDeltaResponse(ctx context.Context, req *cachev3.DeltaRequest, version string, d deltaResult, resources typeItems) *deltaResponse {
	items := make([]types.Resource, len(d.send))
	for i, name := range d.send {
		items[i], _, _ = resources.lookup(name)
	}
	typeURL := req.GetTypeUrl()
	return &deltaResponse{ctx: ctx, req: req, version: version, next: d.next, wire: sync.OnceValues(func() (*discoveryv3.DeltaDiscoveryResponse, error) {
		out := &discoveryv3.DeltaDiscoveryResponse{TypeUrl: typeURL, SystemVersionInfo: version, RemovedResources: d.removed}
		for i, item := range items {
			b, err := cachev3.MarshalResource(item)
			if err != nil {
				return nil, err
			}
			out.Resources = append(out.Resources, &discoveryv3.Resource{
				Name: d.send[i], Version: cachev3.HashResource(b), Resource: &anypb.Any{TypeUrl: typeURL, Value: b},
			})
		}
		return out, nil
	})}
}

func (r *deltaResponse) GetDeltaDiscoveryResponse() (*discoveryv3.DeltaDiscoveryResponse, error) {
	return r.wire()
}
func (r *deltaResponse) GetDeltaRequest() *discoveryv3.DeltaDiscoveryRequest { return r.req }
func (r *deltaResponse) GetSystemVersion() (string, error)                   { return r.version, nil }
func (r *deltaResponse) GetResponseVersion() string                          { return r.version }
func (r *deltaResponse) GetNextVersionMap() map[string]string                { return r.next }
func (r *deltaResponse) GetReturnedResources() map[string]string             { return r.next }
func (r *deltaResponse) GetContext() context.Context                         { return r.ctx }
