package xds

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sync"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// versionLength is the number of hex digits of a version (a truncated SHA-256).
const versionLength = 16

// facts are what Publish needs to know about one resource: the digest of its
// deterministic encoding, the secrets it fetches by SDS over ADS, and the routes and
// endpoints it references (what go-control-plane's consistency check follows).
type facts struct {
	digest [sha256.Size]byte
	// version is the resource's version on incremental streams: the digest in hex.
	version string
	secrets []string
	refs    []string // "<type URL> <name>", sorted
	// hosts are the facts of a route table's virtual hosts, by message, and wire is the
	// form of the table go-control-plane serves (route_table_facts.go); nil for every
	// other resource.
	hosts map[*routev3.VirtualHost]*hostFacts
	wire  *routev3.RouteConfiguration
}

// sorted is the resources of one type in name order, with their facts.
type sorted struct {
	typeURL string
	names   []string
	items   []types.Resource
	facts   []*facts
}

// analysis is a snapshot's resources in canonical order (types by URL, resources by
// name) with their facts. The analysis of the last snapshot of a Gateway is its memo:
// the snapshot cache keeps and serves the resources it is given, so they may not change
// after Publish, and facts learnt about a resource in one publish hold in the next.
type analysis struct {
	types []sorted
	// digests are the digests of each type's resources, set by Publish.
	digests map[string][sha256.Size]byte
	// resources are the versions of each type's resources (resource_versions.go), set by
	// Publish and Resend.
	resources map[string]*typeResources
	// refs count the references to each name (consistency_counts.go), set once the
	// analysis is the Gateway's memo; pendingRefs are the changes its check counted.
	refs        refCounts
	pendingRefs map[refKey]int
}

// analyze orders the resources canonically and learns the facts of those prev does not
// know, spreading the work over the CPUs. It refuses nil resources, resources without
// a name, and two resources of one type with one name (the snapshot would keep one).
// The slices of byType become the analysis's own: the caller must not use them again
// (Publish has them made for this call only, or handed back from prev: ByTypeAgain).
func analyze(byType map[string][]types.Resource, prev *analysis) (*analysis, error) {
	type slot struct{ typ, item int }
	a := &analysis{}
	var todo []slot
	var unknown []types.Resource
	var hints []*facts
	for _, typeURL := range slices.Sorted(maps.Keys(byType)) {
		last := prev.ofType(typeURL)
		if last.holdsExactly(byType[typeURL]) {
			a.types = append(a.types, *last)
			continue
		}
		st, err := sortByName(typeURL, byType[typeURL], last)
		if err != nil {
			return nil, err
		}
		st.reuseFacts(last)
		for i, f := range st.facts {
			if f == nil {
				todo, unknown = append(todo, slot{len(a.types), i}), append(unknown, st.items[i])
				hints = append(hints, last.factsNamed(st.names[i]))
			}
		}
		a.types = append(a.types, st)
	}
	learnt, err := parallelFacts(unknown, hints)
	if err != nil {
		return nil, err
	}
	for k, s := range todo {
		a.types[s.typ].facts[s.item] = learnt[k]
	}
	return a, nil
}

// itemsOf is a's resources of typeURL in name order, nil when a is or has none; they
// are never modified.
func (a *analysis) itemsOf(typeURL string) []types.Resource {
	if st := a.ofType(typeURL); st != nil {
		return st.items
	}
	return nil
}

// ofType returns the resources of typeURL, or nil.
func (a *analysis) ofType(typeURL string) *sorted {
	if a == nil {
		return nil
	}
	for i := range a.types {
		if a.types[i].typeURL == typeURL {
			return &a.types[i]
		}
	}
	return nil
}

// factsNamed returns the facts of the resource named name, or nil.
func (st *sorted) factsNamed(name string) *facts {
	if st == nil {
		return nil
	}
	if i, ok := slices.BinarySearch(st.names, name); ok {
		return st.facts[i]
	}
	return nil
}

// reuseFacts takes the facts prev learnt about the very same resources (the same
// pointer under the same name), walking both name-ordered lists side by side.
func (st *sorted) reuseFacts(prev *sorted) {
	if prev == nil {
		return
	}
	j := 0
	for i, name := range st.names {
		for j < len(prev.names) && prev.names[j] < name {
			j++
		}
		if j < len(prev.names) && prev.names[j] == name && prev.items[j] == st.items[i] {
			st.facts[i] = prev.facts[j]
		}
	}
}

// holdsExactly says whether st is rs: the very same messages in the same order. The
// builders hand a type over in name order and keep every unchanged message, so a type
// with nothing changed is its last analysis again, shared as it is (an analysis is never
// modified once made). A Backend's change usually leaves most types as they were, and
// each was sorted again with its names, items and facts made anew: with 10,000
// mutual-TLS clusters, their 20,000 secrets and 10,000 load assignments, 1.3 MB a
// publish (BenchmarkPublish10000).
func (st *sorted) holdsExactly(rs []types.Resource) bool {
	if st == nil || len(st.items) != len(rs) {
		return false
	}
	if len(rs) > 0 && &rs[0] == &st.items[0] { // handed back by ByTypeAgain
		return true
	}
	for i, r := range rs {
		if r != st.items[i] {
			return false
		}
	}
	return true
}

// sortByName orders the resources by name; the builders already hand them over in
// that order, which is checked first in linear time, and only then are they sorted.
// rs becomes the sorted's own (analyze). When rs has last's names in last's order (a
// change replaced messages, and added or removed none), last's names are rs's: they
// are never modified, and were checked when last was made.
func sortByName(typeURL string, rs []types.Resource, last *sorted) (sorted, error) {
	st := sorted{typeURL: typeURL, items: rs, facts: make([]*facts, len(rs))}
	if last.namedAs(rs) {
		st.names = last.names
		return st, nil
	}
	st.names = make([]string, len(rs))
	for i, r := range rs {
		if r == nil || !r.ProtoReflect().IsValid() {
			return sorted{}, fmt.Errorf("%s #%d is nil", kind(typeURL), i)
		}
		if st.names[i] = cachev3.GetResourceName(r); st.names[i] == "" {
			return sorted{}, fmt.Errorf("%s #%d has no name", kind(typeURL), i)
		}
	}
	if !slices.IsSorted(st.names) {
		st.sortByName()
	}
	for i := 1; i < len(st.names); i++ {
		if st.names[i] == st.names[i-1] {
			return sorted{}, fmt.Errorf("two %s resources are named %q", kind(typeURL), st.names[i])
		}
	}
	return st, nil
}

// namedAs says whether rs are valid resources with st's names in st's order.
func (st *sorted) namedAs(rs []types.Resource) bool {
	if st == nil || len(st.names) != len(rs) {
		return false
	}
	for i, r := range rs {
		if r == nil || !r.ProtoReflect().IsValid() || cachev3.GetResourceName(r) != st.names[i] {
			return false
		}
	}
	return true
}

// sortByName puts names and items in name order, together.
func (st *sorted) sortByName() {
	order := make([]int, len(st.names))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(st.names[a], st.names[b]) })
	names, items := make([]string, len(order)), make([]types.Resource, len(order))
	for i, j := range order {
		names[i], items[i] = st.names[j], st.items[j]
	}
	st.names, st.items = names, items
}

// parallelFacts learns the facts of rs on every CPU; hints[i] are the facts of the
// resource rs[i] replaces (nil for none), whose parts factsOf may reuse.
func parallelFacts(rs []types.Resource, hints []*facts) ([]*facts, error) {
	out := make([]*facts, len(rs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(rs)/64))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(rs); i += workers {
				f, err := factsOf(rs[i], hints[i])
				if err != nil {
					errs[w] = err
					return
				}
				out[i] = f
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// ErrInvalidResource marks a Publish refused because a resource fails the proto
// constraints: the caller can find which object produced it (Validate) and leave it out.
var ErrInvalidResource = errors.New("a resource fails Envoy's proto constraints")

// Validate checks every resource of res against the proto constraints as Publish does,
// without publishing: for the caller's search of the object behind an
// ErrInvalidResource.
func Validate(res envoyconfig.Resources) error {
	for _, rs := range res.ByType() {
		for _, r := range rs {
			if err := validate(r); err != nil {
				return err
			}
		}
	}
	return nil
}

// validate checks r against its proto constraints: Envoy would reject what fails them,
// and the message of such a rejection carries the whole resource, keys included.
func validate(r types.Resource) error {
	if v, ok := r.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			what := fmt.Sprintf("%s %q", r.ProtoReflect().Descriptor().Name(), cachev3.GetResourceName(r))
			return invalidResource{fmt.Errorf("%s is invalid: %w", what, err)}
		}
	}
	return nil
}

// invalidResource is a validation error that is ErrInvalidResource, with the message
// of the error it wraps.
type invalidResource struct{ err error }

func (e invalidResource) Error() string        { return e.err.Error() }
func (e invalidResource) Unwrap() error        { return e.err }
func (e invalidResource) Is(target error) bool { return target == ErrInvalidResource }

// factsOf validates r and learns its facts; a route table takes those of its virtual
// hosts that hint, the facts of the table it replaces, learnt.
func factsOf(r types.Resource, hint *facts) (*facts, error) {
	if rc, ok := r.(*routev3.RouteConfiguration); ok {
		return tableFacts(rc, hint)
	}
	what := fmt.Sprintf("%s %q", r.ProtoReflect().Descriptor().Name(), cachev3.GetResourceName(r))
	if err := validate(r); err != nil {
		return nil, err
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", what, err)
	}
	f := &facts{digest: sha256.Sum256(b)}
	f.version = hex.EncodeToString(f.digest[:])
	switch r.(type) {
	case *listenerv3.Listener, *clusterv3.Cluster:
	default:
		return f, nil // endpoints and secrets reference nothing
	}
	refs := map[string]bool{}
	if err := collectInEncoded(b, r.ProtoReflect().Descriptor(), refs); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	f.secrets = slices.Sorted(maps.Keys(refs))
	f.refs = resourceRefs(r)
	return f, nil
}

// resourceRefs lists the routes and endpoints r references, as go-control-plane's
// consistency check sees them.
func resourceRefs(r types.Resource) []string {
	var out []string
	byType := cachev3.GetResourceReferences(map[string]types.ResourceWithTTL{"": {Resource: r}})
	for typeURL, names := range byType {
		for name := range names {
			out = append(out, typeURL+" "+name)
		}
	}
	slices.Sort(out)
	return out
}

// version is the snapshot's content version: a hash of each type URL with the digest
// of that type's resources (typeDigest).
func (a *analysis) version() string {
	version, _ := a.versions(nil)
	return version
}

// versions returns version() and, per type URL, the digest of that type's resources
// alone, which tells whether a type changed between two snapshots. A type whose
// resources are prev's very resources (the same facts, in the same order) keeps prev's
// digest: hashing the names and digests of every resource again was a tenth of a
// one-Backend change at 30,000 Backends.
func (a *analysis) versions(prev *analysis) (string, map[string][sha256.Size]byte) {
	h := sha256.New()
	byType := make(map[string][sha256.Size]byte, len(a.types))
	for i := range a.types {
		st := &a.types[i]
		d, ok := prev.digestOf(st)
		if !ok {
			d = typeDigest(st)
		}
		byType[st.typeURL] = d
		h.Write(appendField(nil, st.typeURL))
		h.Write(d[:])
	}
	return hex.EncodeToString(h.Sum(nil))[:versionLength], byType
}

// digestOf is prev's digest of st's type when prev's resources of that type are st's,
// fact for fact (a fact is reused only for the very message under the same name).
func (a *analysis) digestOf(st *sorted) ([sha256.Size]byte, bool) {
	p := a.ofType(st.typeURL)
	if p == nil || len(p.facts) != len(st.facts) {
		return [sha256.Size]byte{}, false
	}
	d, ok := a.digests[st.typeURL]
	if !ok {
		return [sha256.Size]byte{}, false
	}
	for i, f := range st.facts {
		if f != p.facts[i] {
			return [sha256.Size]byte{}, false
		}
	}
	return d, true
}

// typeDigest hashes the type URL and each resource's name and digest, in name order.
// The fields go to the hash through a small buffer: ten thousand clusters would
// otherwise take megabytes to hold before hashing.
func typeDigest(st *sorted) [sha256.Size]byte {
	h := sha256.New()
	buf := make([]byte, 0, 8<<10)
	buf = appendField(buf, st.typeURL)
	for i, name := range st.names {
		if len(buf)+binary.MaxVarintLen64+len(name)+sha256.Size > cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
		buf = appendField(buf, name)
		buf = append(buf, st.facts[i].digest[:]...)
	}
	h.Write(buf)
	return [sha256.Size]byte(h.Sum(nil))
}

// sameReferences tells whether a has the resource names of prev, type by type, and
// every resource that is not prev's very resource references what prev's did. The
// snapshot's consistency (every reference resolves, every resource is referenced)
// depends on nothing else, so it then holds as it did for prev.
func (a *analysis) sameReferences(prev *analysis) bool {
	if prev == nil || len(a.types) != len(prev.types) {
		return false
	}
	for t, st := range a.types {
		p := &prev.types[t]
		if st.typeURL != p.typeURL || !slices.Equal(st.names, p.names) {
			return false
		}
		for i, item := range st.items {
			if item != p.items[i] && !sameRefs(st.facts[i], p.facts[i]) {
				return false
			}
		}
	}
	return true
}

func sameRefs(a, b *facts) bool {
	return slices.Equal(a.secrets, b.secrets) && slices.Equal(a.refs, b.refs)
}

// appendField appends a length-prefixed field, so that no two sequences of fields hash
// the same bytes.
func appendField(buf []byte, field string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(field))), field...)
}
