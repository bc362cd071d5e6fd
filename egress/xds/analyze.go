package xds

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
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
)

// versionLength is the number of hex digits of a version (a truncated SHA-256).
const versionLength = 16

// facts are what Publish needs to know about one resource: the digest of its
// deterministic encoding and the secrets it fetches by SDS over ADS.
type facts struct {
	digest  [sha256.Size]byte
	secrets []string
}

// memo is the facts of a snapshot's resources, keyed by the resource itself (the
// pointer). The snapshot cache keeps and serves the resources it is given, so they may
// not change after Publish, and facts learnt in one publish hold in the next.
type memo map[types.Resource]*facts

// sorted is the resources of one type in name order, with their facts.
type sorted struct {
	typeURL string
	names   []string
	items   []types.Resource
	facts   []*facts
}

// analysis is a snapshot's resources in canonical order (types by URL, resources by
// name) with their facts.
type analysis struct {
	types []sorted
	memo  memo
}

// analyze orders the resources canonically and learns the facts of those prev does not
// know, spreading the work over the CPUs. It refuses nil resources, resources without
// a name, and two resources of one type with one name (the snapshot would keep one).
func analyze(byType map[string][]types.Resource, prev memo) (analysis, error) {
	type slot struct{ typ, item int }
	var a analysis
	var todo []slot
	var unknown []types.Resource
	for _, typeURL := range slices.Sorted(maps.Keys(byType)) {
		st, err := sortByName(typeURL, byType[typeURL])
		if err != nil {
			return analysis{}, err
		}
		for i, r := range st.items {
			if f, ok := prev[r]; ok {
				st.facts[i] = f
			} else {
				todo, unknown = append(todo, slot{len(a.types), i}), append(unknown, r)
			}
		}
		a.types = append(a.types, st)
	}
	learnt, err := parallelFacts(unknown)
	if err != nil {
		return analysis{}, err
	}
	for k, s := range todo {
		a.types[s.typ].facts[s.item] = learnt[k]
	}
	a.memo = make(memo, len(prev)+len(unknown))
	for _, st := range a.types {
		for i, r := range st.items {
			a.memo[r] = st.facts[i]
		}
	}
	return a, nil
}

func sortByName(typeURL string, rs []types.Resource) (sorted, error) {
	type named struct {
		name string
		r    types.Resource
	}
	byName := make([]named, len(rs))
	for i, r := range rs {
		if r == nil || !r.ProtoReflect().IsValid() {
			return sorted{}, fmt.Errorf("%s #%d is nil", kind(typeURL), i)
		}
		if byName[i] = (named{cachev3.GetResourceName(r), r}); byName[i].name == "" {
			return sorted{}, fmt.Errorf("%s #%d has no name", kind(typeURL), i)
		}
	}
	slices.SortFunc(byName, func(a, b named) int { return cmp.Compare(a.name, b.name) })
	st := sorted{
		typeURL: typeURL,
		names:   make([]string, len(rs)),
		items:   make([]types.Resource, len(rs)),
		facts:   make([]*facts, len(rs)),
	}
	for i, n := range byName {
		if i > 0 && n.name == byName[i-1].name {
			return sorted{}, fmt.Errorf("two %s resources are named %q", kind(typeURL), n.name)
		}
		st.names[i], st.items[i] = n.name, n.r
	}
	return st, nil
}

// parallelFacts learns the facts of rs on every CPU.
func parallelFacts(rs []types.Resource) ([]*facts, error) {
	out := make([]*facts, len(rs))
	workers := min(runtime.GOMAXPROCS(0), max(1, len(rs)/64))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(rs); i += workers {
				f, err := factsOf(rs[i])
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

// factsOf validates r (Envoy would reject what fails the proto constraints, and the
// message of such a rejection carries the whole resource, keys included) and learns its
// facts.
func factsOf(r types.Resource) (*facts, error) {
	what := fmt.Sprintf("%s %q", r.ProtoReflect().Descriptor().Name(), cachev3.GetResourceName(r))
	if v, ok := r.(interface{ ValidateAll() error }); ok {
		if err := v.ValidateAll(); err != nil {
			return nil, fmt.Errorf("%s is invalid: %w", what, err)
		}
	}
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", what, err)
	}
	f := &facts{digest: sha256.Sum256(b)}
	switch r.(type) {
	case *listenerv3.Listener, *clusterv3.Cluster, *routev3.RouteConfiguration:
	default:
		return f, nil // endpoints and secrets reference no secret
	}
	refs := map[string]bool{}
	if err := collectSecretRefs(r.ProtoReflect(), refs); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	f.secrets = slices.Sorted(maps.Keys(refs))
	return f, nil
}

// version hashes the canonical order of type URLs, names and digests.
func (a analysis) version() string {
	var buf []byte
	for _, st := range a.types {
		buf = appendField(buf, st.typeURL)
		for i, name := range st.names {
			buf = appendField(buf, name)
			buf = append(buf, st.facts[i].digest[:]...)
		}
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])[:versionLength]
}

// secretRefs are the secrets the resources fetch by SDS over ADS.
func (a analysis) secretRefs() map[string]bool {
	refs := map[string]bool{}
	for _, st := range a.types {
		for _, f := range st.facts {
			for _, name := range f.secrets {
				refs[name] = true
			}
		}
	}
	return refs
}

// appendField appends a length-prefixed field, so that no two sequences of fields hash
// the same bytes.
func appendField(buf []byte, field string) []byte {
	return append(binary.AppendUvarint(buf, uint64(len(field))), field...)
}
