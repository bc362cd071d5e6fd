package crdvalidate

import (
	"context"
	"crypto/sha256"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// celWalk evaluates a CRD's CEL rules as apiextensions-apiserver's cel.Validator does on
// a create (each node's own rules, then its allOf, then its items or properties; the
// same cost budget, the same errors), but remembers which values each rule node
// accepted: a rule sees only `self` (there is no oldSelf on a create) and CEL is
// deterministic, so a value a node accepted once is accepted again at the same cost.
// Values are compared by what the node's rules read of them (cel_reads.go), so ten
// thousand Backends with distinct hostnames and the same TLS options are one value to
// the TLS rules.
//
// That matters because objects repeat themselves: ten thousand HTTPRoutes name the same
// parent Gateway and default the same path match, and the parentRefs and path rules
// were three quarters of their CEL time. Only acceptances are remembered; a value a rule
// refuses is evaluated every time, so its errors carry the right field path and
// messageExpression.
type celWalk struct {
	root *celNode
	memo *celMemo
}

// celNode is one node of cel.Validator's tree: own holds only this node's rules (its
// children cleared, so its Validate evaluates nothing below), the children are walked
// here.
type celNode struct {
	own        *cel.Validator // nil when the node has no rules of its own
	reads      *reads         // what own's rules see of self
	rate       memoRate
	allOf      []*cel.Validator
	items      *celNode
	properties map[string]*celNode
	additional *celNode
}

func newCELWalk(s *structuralschema.Structural, perCallLimit uint64) *celWalk {
	return &celWalk{root: newCELNode(cel.NewValidator(s, true, perCallLimit)), memo: newCELMemo()}
}

func newCELNode(v *cel.Validator) *celNode {
	if v == nil {
		return nil
	}
	n := &celNode{allOf: v.AllOfValidators, items: newCELNode(v.Items), additional: newCELNode(v.AdditionalProperties)}
	if len(v.Schema.XValidations) > 0 {
		own := *v
		own.Items, own.Properties, own.AdditionalProperties, own.AllOfValidators = nil, nil, nil, nil
		n.own, n.reads = &own, readsOf(v.Schema)
	}
	for k, p := range v.Properties {
		if n.properties == nil {
			n.properties = map[string]*celNode{}
		}
		n.properties[k] = newCELNode(&p)
	}
	return n
}

// validate is cel.Validator.Validate for a create: obj has no old value.
func (w *celWalk) validate(ctx context.Context, obj any, budget int64) (field.ErrorList, int64) {
	return w.node(ctx, w.root, nil, obj, budget)
}

func (w *celWalk) node(ctx context.Context, n *celNode, path *field.Path, obj any, budget int64) (field.ErrorList, int64) {
	if n == nil || obj == nil {
		return nil, budget
	}
	errs, budget := w.own(ctx, n, path, obj, budget)
	if budget < 0 {
		return errs, budget
	}
	for _, v := range n.allOf {
		var more field.ErrorList
		more, budget = v.Validate(ctx, path, nil, obj, nil, budget)
		if errs = append(errs, more...); budget < 0 {
			return errs, budget
		}
	}
	switch obj := obj.(type) {
	case []any:
		return w.items(ctx, n, path, obj, errs, budget)
	case map[string]any:
		return w.fields(ctx, n, path, obj, errs, budget)
	}
	return errs, budget
}

func (w *celWalk) items(ctx context.Context, n *celNode, path *field.Path, obj []any, errs field.ErrorList, budget int64) (field.ErrorList, int64) {
	if n.items == nil {
		return errs, budget
	}
	for i, v := range obj {
		var more field.ErrorList
		more, budget = w.node(ctx, n.items, path.Index(i), v, budget)
		if errs = append(errs, more...); budget < 0 {
			break
		}
	}
	return errs, budget
}

// fields walks a map's values in key order (the API server walks them in Go's map
// order, so any order is one it could have produced).
func (w *celWalk) fields(ctx context.Context, n *celNode, path *field.Path, obj map[string]any, errs field.ErrorList, budget int64) (field.ErrorList, int64) {
	if n.additional == nil && n.properties == nil {
		return errs, budget
	}
	keys := sortedKeys(obj)
	if n.additional != nil {
		for _, k := range keys {
			var more field.ErrorList
			more, budget = w.node(ctx, n.additional, path.Key(k), obj[k], budget)
			if errs = append(errs, more...); budget < 0 {
				return errs, budget
			}
		}
	}
	for _, k := range keys {
		sub, ok := n.properties[k]
		if !ok {
			continue
		}
		var more field.ErrorList
		more, budget = w.node(ctx, sub, path.Child(k), obj[k], budget)
		if errs = append(errs, more...); budget < 0 {
			return errs, budget
		}
	}
	return errs, budget
}

// own evaluates n's own rules on obj, or takes their cost from the memo when they
// accepted this very value before and the budget still covers it.
func (w *celWalk) own(ctx context.Context, n *celNode, path *field.Path, obj any, budget int64) (field.ErrorList, int64) {
	if n.own == nil {
		return nil, budget
	}
	if !n.rate.worthIt() {
		return n.own.Validate(ctx, path, nil, obj, nil, budget)
	}
	value, exact := project(nil, obj, n.reads)
	key := celMemoKey{node: n, value: sha256.Sum256(value)}
	if cost, ok := w.memo.get(key); n.rate.hit(exact && ok && cost <= budget) {
		return nil, budget - cost
	}
	errs, left := n.own.Validate(ctx, path, nil, obj, nil, budget)
	if exact && len(errs) == 0 && left >= 0 {
		w.memo.put(key, budget-left)
	}
	return errs, left
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// celMemo is what each rule node accepted and what it cost, shared by the goroutines
// validating at once. A value is remembered by the SHA-256 of its exact key: ten
// thousand distinct hostnames cost 32 bytes each, not their whole subtrees (the keys
// themselves added 30 MiB to the peak of `portcullis translate` on 10,000 Backends and
// routes), and telling two values apart by a collision-resistant digest of an
// unambiguous encoding is as good as comparing the encodings. It stops growing at
// maxCELMemoEntries.
type celMemo struct {
	mu       sync.RWMutex
	accepted map[celMemoKey]int64
}

type celMemoKey struct {
	node  *celNode
	value [sha256.Size]byte
}

const maxCELMemoEntries = 1 << 20

func newCELMemo() *celMemo { return &celMemo{accepted: map[celMemoKey]int64{}} }

func (m *celMemo) get(key celMemoKey) (int64, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	cost, ok := m.accepted[key]
	return cost, ok
}

func (m *celMemo) put(key celMemoKey, cost int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.accepted) < maxCELMemoEntries {
		m.accepted[key] = cost
	}
}

// appendValueKey appends an exact, unambiguous encoding of a decoded JSON value: a type
// letter before every value, lengths before strings and collections, map keys sorted.
// Two values have the same encoding only if they are equal (as CEL sees them: the
// decoder's int64 and float64 stay apart). It is not exact (false), and must not be
// used, when v holds something the JSON decoder does not make.
func appendValueKey(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, 'n'), true
	case bool:
		return append(b, "ft"[boolIndex(v)]), true
	case string:
		return appendString(append(b, 's'), v), true
	case int64:
		return strconv.AppendInt(append(b, 'i'), v, 10), true
	case float64:
		return strconv.AppendFloat(append(b, 'd'), v, 'g', -1, 64), true
	case []any:
		b = strconv.AppendInt(append(b, 'l'), int64(len(v)), 10)
		exact := true
		for _, e := range v {
			var ok bool
			b, ok = appendValueKey(append(b, ':'), e)
			exact = exact && ok
		}
		return b, exact
	case map[string]any:
		b = strconv.AppendInt(append(b, 'm'), int64(len(v)), 10)
		exact := true
		for _, k := range sortedKeys(v) {
			var ok bool
			b, ok = appendValueKey(appendString(append(b, ':'), k), v[k])
			exact = exact && ok
		}
		return b, exact
	}
	return b, false
}

func boolIndex(v bool) int {
	if v {
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	return append(append(b, '"'), s...)
}

// memoRate counts a node's memo lookups and hits, so that a node whose values never
// repeat (a hostname, a route's whole rule list) stops paying for its keys: after
// memoTrial lookups, a node that hit less than one time in memoHitRatio is validated
// without the memo. Only speed depends on it, never an answer.
type memoRate struct {
	lookups, hits atomic.Int64
}

const (
	memoTrial    = 256
	memoHitRatio = 8
)

func (r *memoRate) worthIt() bool {
	lookups := r.lookups.Load()
	return lookups < memoTrial || r.hits.Load()*memoHitRatio >= lookups
}

// hit counts a lookup and returns whether it hit.
func (r *memoRate) hit(hit bool) bool {
	r.lookups.Add(1)
	if hit {
		r.hits.Add(1)
	}
	return hit
}
