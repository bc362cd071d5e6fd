package crdvalidate

import (
	"sort"
	"strconv"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/overloads"
	"github.com/google/cel-go/parser"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
)

// reads is what a node's CEL rules can see of `self`, found by reading the rules'
// syntax: a rule like `!(has(self.caCertificates) && has(self.wellKnownCACertificates))`
// sees whether two fields are there, not the hostname next to them, so every Backend
// with the same TLS options is the same value to it. The memo keys a node's value by
// its projection on these reads (project), so values that differ only where no rule
// looks share one evaluation.
//
// The reading is conservative: whatever a rule does with a part of self other than
// select a field, test a field's presence, index it, take its size or iterate over it
// reads that part whole (its every byte is in the key). A rule that does not parse here,
// or mentions oldSelf, reads all of self.
type reads struct {
	whole   bool
	shape   bool              // its size, or its keys
	present map[string]bool   // fields whose presence is tested
	fields  map[string]*reads // fields read further
	elems   *reads            // any element, or any field's value (an index, an iteration)
	names   []string          // the fields tested or read, sorted (set by finish)
}

// readsOf is what the rules of s (one schema node) see of self.
func readsOf(s *structuralschema.Structural) *reads {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...), parser.EnableOptionalSyntax(true))
	if err != nil {
		return &reads{whole: true}
	}
	self := &reads{}
	for _, rule := range s.XValidations {
		tree, errs := p.Parse(common.NewTextSource(rule.Rule))
		if len(errs.GetErrors()) > 0 || strings.Contains(rule.Rule, "oldSelf") {
			return &reads{whole: true}
		}
		a := readsAnalysis{scope: map[string]*reads{"self": self}}
		a.consume(tree.Expr())
	}
	self.finish()
	return self
}

// readsAnalysis walks one rule; scope binds the names that stand for parts of self.
type readsAnalysis struct {
	scope map[string]*reads
}

// consume walks e, whose value is used as it is: if it is a part of self, all of it is
// read.
func (a readsAnalysis) consume(e ast.Expr) {
	if r := a.walk(e); r != nil {
		r.whole = true
	}
}

// walk walks e and returns the part of self e's value is, or nil when it is none.
func (a readsAnalysis) walk(e ast.Expr) *reads {
	switch e.Kind() {
	case ast.IdentKind:
		return a.scope[e.AsIdent()]
	case ast.SelectKind:
		return a.selects(e.AsSelect())
	case ast.CallKind:
		return a.call(e.AsCall())
	case ast.ComprehensionKind:
		a.comprehension(e.AsComprehension())
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			a.consume(el)
		}
	case ast.MapKind:
		for _, entry := range e.AsMap().Entries() {
			a.consume(entry.AsMapEntry().Key())
			a.consume(entry.AsMapEntry().Value())
		}
	case ast.StructKind:
		for _, f := range e.AsStruct().Fields() {
			a.consume(f.AsStructField().Value())
		}
	}
	return nil
}

func (a readsAnalysis) selects(s ast.SelectExpr) *reads {
	r := a.walk(s.Operand())
	if r == nil {
		return nil
	}
	if s.IsTestOnly() {
		if r.present == nil {
			r.present = map[string]bool{}
		}
		for _, name := range fieldNames(s.FieldName()) {
			r.present[name] = true
		}
		return nil
	}
	return r.field(s.FieldName())
}

// fieldNames are the keys a selected name may stand for: CEL spells a property whose
// name is a reserved word or not an identifier escaped (`self.__namespace__` reads
// "namespace"), a key of a map as it is.
func fieldNames(name string) []string {
	if unescaped, ok := apiservercel.Unescape(name); ok && unescaped != name {
		return []string{name, unescaped}
	}
	return []string{name}
}

// call: an index reads any element, size reads the shape, anything else reads its
// arguments whole.
func (a readsAnalysis) call(c ast.CallExpr) *reads {
	args := c.Args()
	if c.IsMemberFunction() {
		args = append([]ast.Expr{c.Target()}, args...)
	}
	switch {
	case c.FunctionName() == operators.Index && len(args) == 2:
		a.consume(args[1])
		if r := a.walk(args[0]); r != nil {
			r.shape = true
			return r.elem()
		}
		return nil
	case c.FunctionName() == overloads.Size && len(args) == 1:
		if r := a.walk(args[0]); r != nil {
			r.shape = true
		}
		return nil
	}
	for _, arg := range args {
		a.consume(arg)
	}
	return nil
}

// comprehension: iterating over a part of self reads its shape, and binds the
// iteration variables to any element of it (for a map the first variable is a key:
// reading it whole reads an element whole, more than the key, which is safe).
func (a readsAnalysis) comprehension(c ast.ComprehensionExpr) {
	var elem *reads
	if r := a.walk(c.IterRange()); r != nil {
		r.shape = true
		elem = r.elem()
	}
	a.consume(c.AccuInit())
	loop := a.with(map[string]*reads{c.IterVar(): elem, c.AccuVar(): nil})
	if c.HasIterVar2() {
		loop.scope[c.IterVar2()] = elem
	}
	loop.consume(c.LoopCondition())
	loop.consume(c.LoopStep())
	a.with(map[string]*reads{c.AccuVar(): nil}).consume(c.Result())
}

// with is a with names bound (or hidden, when bound to nil) on top of its scope.
func (a readsAnalysis) with(names map[string]*reads) readsAnalysis {
	scope := make(map[string]*reads, len(a.scope)+len(names))
	for k, v := range a.scope {
		scope[k] = v
	}
	for k, v := range names {
		scope[k] = v
	}
	return readsAnalysis{scope: scope}
}

// field is what is read of the field name, under every key it may stand for.
func (r *reads) field(name string) *reads {
	if r.fields == nil {
		r.fields = map[string]*reads{}
	}
	f := r.fields[name]
	if f == nil {
		f = &reads{}
		for _, key := range fieldNames(name) {
			r.fields[key] = f
		}
	}
	return f
}

func (r *reads) elem() *reads {
	if r.elems == nil {
		r.elems = &reads{}
	}
	return r.elems
}

// finish makes every field read also read what any element is read for, so that
// project takes one node per field, and lists the names project encodes.
func (r *reads) finish() {
	if r == nil {
		return
	}
	r.elems.finish()
	for _, f := range r.fields {
		f.add(r.elems)
		f.finish()
	}
	seen := map[string]bool{}
	for k := range r.present {
		seen[k] = true
	}
	for k := range r.fields {
		seen[k] = true
	}
	r.names = r.names[:0]
	for k := range seen {
		r.names = append(r.names, k)
	}
	sort.Strings(r.names)
}

// add makes r read what o reads too.
func (r *reads) add(o *reads) {
	if o == nil {
		return
	}
	r.whole = r.whole || o.whole
	r.shape = r.shape || o.shape
	for k := range o.present {
		if r.present == nil {
			r.present = map[string]bool{}
		}
		r.present[k] = true
	}
	for k, f := range o.fields {
		r.field(k).add(f)
	}
	if o.elems != nil {
		r.elem().add(o.elems)
	}
}

// project appends v's projection on r: an unambiguous encoding of exactly what r
// reads of v (all of v where r reads it whole, or where v is not what r expects).
// The second result is false when v holds something valueKey has no exact key for.
func project(b []byte, v any, r *reads) ([]byte, bool) {
	switch x := v.(type) {
	case map[string]any:
		if r != nil && !r.whole {
			return projectMap(b, x, r)
		}
	case []any:
		if r != nil && !r.whole && len(r.fields) == 0 && len(r.present) == 0 {
			return projectList(b, x, r)
		}
	}
	return appendValueKey(append(b, 'W'), v)
}

func projectList(b []byte, l []any, r *reads) ([]byte, bool) {
	b = strconv.AppendInt(append(b, 'L'), int64(len(l)), 10)
	if r.elems == nil {
		return b, true
	}
	exact := true
	for _, e := range l {
		var ok bool
		b, ok = project(append(b, ':'), e, r.elems)
		exact = exact && ok
	}
	return b, exact
}

// projectMap encodes every key when r reads the shape or any element, else only the
// fields r names; each as absent, null or there, and what r reads of it.
func projectMap(b []byte, m map[string]any, r *reads) ([]byte, bool) {
	var names []string
	if r.shape || r.elems != nil {
		b, names = append(b, 'K'), sortedKeys(m)
	} else {
		b, names = append(b, 'F'), r.names
	}
	b = strconv.AppendInt(b, int64(len(names)), 10)
	exact := true
	for _, k := range names {
		b = appendString(append(b, ':'), k)
		v, there := m[k]
		switch {
		case !there:
			b = append(b, 'A')
			continue
		case v == nil:
			b = append(b, 'N')
			continue
		}
		b = append(b, 'P')
		sub := r.fields[k]
		if sub == nil {
			sub = r.elems
		}
		if sub != nil {
			var ok bool
			b, ok = project(b, v, sub)
			exact = exact && ok
		}
	}
	return b, exact
}
