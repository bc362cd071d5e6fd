package envoyconfig

import (
	"reflect"
	"strings"
	"testing"

	"github.com/portcullis-io/portcullis/egress/ir"
	"github.com/portcullis-io/portcullis/internal/reflectfill"
)

// The build cache is only as correct as its equality functions: an IR field they forget
// would let a stale resource be reused. These tests walk every field of the
// IR types by reflection, so a field added to the IR fails them until it is handled.

// node is one place in a value a mutation can change: a leaf, or a pointer, slice or
// map that can be emptied.
type node struct {
	path string
	v    reflect.Value
}

// nodes lists the places of v in a fixed order, leaving out the fields whose paths
// (".VirtualHosts", ".Tenants[0].VirtualHosts") are in skip.
func nodes(v reflect.Value, path string, skip map[string]bool) []node {
	var out []node
	switch v.Kind() {
	case reflect.Pointer:
		out = append(out, node{path, v})
		out = append(out, nodes(v.Elem(), path, skip)...)
	case reflect.Slice:
		out = append(out, node{path, v})
		if v.Type().Elem().Kind() != reflect.Uint8 { // a []byte is one leaf
			out = append(out, nodes(v.Index(0), path+"[0]", skip)...)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			name := path + "." + v.Type().Field(i).Name
			if !skip[name] {
				out = append(out, nodes(v.Field(i), name, skip)...)
			}
		}
	default:
		out = append(out, node{path, v})
	}
	return out
}

// mutate changes the value at n: a different leaf value, or an emptied reference.
func mutate(n node) {
	v := n.v
	switch v.Kind() {
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(v.Int() + 1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Pointer, reflect.Map:
		v.SetZero()
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			v.SetBytes(append(v.Bytes(), 'x'))
			return
		}
		v.SetZero()
	default:
		panic("mutate: unhandled kind " + v.Kind().String() + " at " + n.path)
	}
}

// equalityCase is an equality function over one IR type, with the fields it ignores on
// purpose.
type equalityCase struct {
	name  string
	new   func() reflect.Value // a pointer to a zero value
	equal func(a, b reflect.Value) bool
	skip  map[string]bool
}

func equalityCases() []equalityCase {
	return []equalityCase{
		{"cluster settings", newOf[ir.Cluster], eq(equalClusterSettings), map[string]bool{".Endpoints": true}},
		{"secret", newOf[ir.Secret], eq((*ir.Secret).Equal), nil},
		{"listener head", newOf[ir.Listener], eq(equalListenerHead), listenerTables},
		{"listener", newOf[ir.Listener], eq(equalListener), nil},
	}
}

func newOf[T any]() reflect.Value { return reflect.New(reflect.TypeFor[T]()) }

func eq[T any](f func(a, b *T) bool) func(a, b reflect.Value) bool {
	return func(a, b reflect.Value) bool { return f(a.Interface().(*T), b.Interface().(*T)) }
}

func filled(c equalityCase) reflect.Value {
	v := c.new()
	reflectfill.Fill(v.Elem())
	return v
}

func TestEqualityCoversEveryField(t *testing.T) {
	for _, c := range equalityCases() {
		t.Run(c.name, func(t *testing.T) {
			if !c.equal(filled(c), filled(c)) {
				t.Fatal("two equal values compare unequal")
			}
			count := len(nodes(filled(c).Elem(), "", c.skip))
			for k := range count {
				b := filled(c)
				n := nodes(b.Elem(), "", c.skip)[k]
				mutate(n)
				if c.equal(filled(c), b) {
					t.Errorf("changing %s is not noticed", n.path)
				}
			}
		})
	}
}

// TestListenerHeadIsTheListenerWithoutItsTables: what the memo keeps of a listener is
// every field the listener resource is built from, and none of the route tables (which
// it would otherwise hold on to after they changed).
func TestListenerHeadIsTheListenerWithoutItsTables(t *testing.T) {
	l := newOf[ir.Listener]()
	reflectfill.Fill(l.Elem())
	orig := l.Interface().(*ir.Listener)
	head := headOf(orig)
	if !reflect.DeepEqual(skipped(reflect.ValueOf(head), listenerTables), skipped(l, listenerTables)) {
		t.Fatalf("the head differs from the listener:\n%+v\n%+v", *head, *orig)
	}
	if head.VirtualHosts != nil || head.Tenants[0].VirtualHosts != nil {
		t.Fatal("the head holds the listener's virtual hosts")
	}
	if orig.VirtualHosts == nil || orig.Tenants[0].VirtualHosts == nil {
		t.Fatal("taking the head changed the listener")
	}
}

// TestSameMemoryIsEqualOnlyAtTheSameLength: a slice over the same memory compares equal
// without a look at its elements, but only at the same length (a longer slice may
// share the start of a kept one).
func TestSameMemoryIsEqualOnlyAtTheSameLength(t *testing.T) {
	kept := []string{"a", "b", "c"}
	neverEqual := func(a, b string) bool { return false }
	tests := []struct {
		name string
		a, b []string
		want bool
	}{
		{"same memory and length", kept, kept, true},
		{"same memory, shorter", kept, kept[:2], false},
		{"same memory, longer", kept[:2], kept, false},
		{"nil and empty", nil, []string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := equalSlice(tt.a, tt.b); got != tt.want {
				t.Errorf("equalSlice = %v, want %v", got, tt.want)
			}
			if got := equalSliceFunc(tt.a, tt.b, neverEqual); got != tt.want {
				t.Errorf("equalSliceFunc = %v, want %v", got, tt.want)
			}
		})
	}
	if !equalSlice(kept, []string{"a", "b", "c"}) || equalSlice(kept, []string{"a", "b", "x"}) {
		t.Error("other memory is not compared element by element")
	}
}

// listenerTables are the fields of a listener that go to route configurations, not to
// the listener resource (equalListenerHead).
var listenerTables = map[string]bool{".VirtualHosts": true, ".Tenants[0].VirtualHosts": true}

// skipped is a deep copy of v (a filled value: one element per slice) with the fields
// at the paths in skip zeroed.
func skipped(v reflect.Value, skip map[string]bool) any {
	out := reflect.New(v.Elem().Type())
	deepCopy(out.Elem(), v.Elem())
	for path := range skip {
		zeroAt(out.Elem(), path)
	}
	return out.Interface()
}

// zeroAt zeroes the field at path (".Tenants[0].VirtualHosts") of v, if v has one there.
func zeroAt(v reflect.Value, path string) {
	for path != "" {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return
			}
			v = v.Elem()
		}
		if rest, ok := strings.CutPrefix(path, "[0]"); ok {
			if v.Len() == 0 {
				return
			}
			v, path = v.Index(0), rest
			continue
		}
		name, rest, _ := strings.Cut(path[1:], ".")
		name, index, indexed := strings.Cut(name, "[")
		v, path = v.FieldByName(name), rest
		if path != "" {
			path = "." + path
		}
		if indexed {
			path = "[" + index + path
		}
	}
	v.SetZero()
}

// deepCopy copies src into dst, following pointers and slices, so that zeroing a field
// of the copy leaves src as it was.
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(reflect.New(src.Type().Elem()))
			deepCopy(dst.Elem(), src.Elem())
		}
	case reflect.Slice:
		if !src.IsNil() {
			dst.Set(reflect.MakeSlice(src.Type(), src.Len(), src.Len()))
			for i := range src.Len() {
				deepCopy(dst.Index(i), src.Index(i))
			}
		}
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

// TestFillReachesEveryField guards the helpers themselves: a type they could not fill
// would make the tests above pass vacuously.
func TestFillReachesEveryField(t *testing.T) {
	for _, c := range equalityCases() {
		for _, n := range nodes(filled(c).Elem(), "", nil) {
			if n.v.IsZero() {
				t.Errorf("%s: %s was not filled", c.name, strings.TrimPrefix(n.path, "."))
			}
		}
	}
}
