package crdvalidate

import "testing"

// TestValueKeysTellValuesApart: the remembered acceptances are keyed by valueKey, so two
// values CEL could tell apart must never share a key, and a key must not depend on Go's
// map order.
func TestValueKeysTellValuesApart(t *testing.T) {
	different := []struct {
		name string
		a, b any
	}{
		{"an integer and a float of the same number", int64(1), float64(1)},
		{"a string and the same text in a list", "a", []any{"a"}},
		{"a number and its text", int64(12), "12"},
		{"true and false", true, false},
		{"null and an empty string", nil, ""},
		{"an empty list and an empty map", []any{}, map[string]any{}},
		{"a key's text running into its value", map[string]any{"a1": "b"}, map[string]any{"a": "1b"}},
		{"a string holding what would follow it", []any{"a", "b"}, []any{"a:1\"b"}},
		{"two lists split differently", []any{[]any{"a"}, "b"}, []any{[]any{"a", "b"}}},
		{"maps of different sizes", map[string]any{"a": nil}, map[string]any{}},
		{"a float's exponent", float64(1e21), float64(1e22)},
	}
	for _, c := range different {
		t.Run(c.name, func(t *testing.T) {
			a, okA := valueKey(c.a)
			b, okB := valueKey(c.b)
			if !okA || !okB {
				t.Fatalf("decoded JSON values must have exact keys (%v, %v)", okA, okB)
			}
			if string(a) == string(b) {
				t.Errorf("%#v and %#v share the key %q", c.a, c.b, a)
			}
		})
	}
}

func TestValueKeysIgnoreMapOrder(t *testing.T) {
	m := map[string]any{}
	for _, k := range []string{"q", "w", "e", "r", "t", "y", "u", "i", "o", "p"} {
		m[k] = k
	}
	first, _ := valueKey(m)
	for range 20 {
		if again, _ := valueKey(m); string(again) != string(first) {
			t.Fatalf("the key of one map changed: %q then %q", first, again)
		}
	}
}

// TestValuesNotFromJSONAreNotRemembered: a value the decoder does not make (an int, a
// struct) has no exact key, so nothing is remembered for it.
func TestValuesNotFromJSONAreNotRemembered(t *testing.T) {
	for _, v := range []any{1, map[string]any{"a": 1}, []any{struct{}{}}} {
		if _, exact := valueKey(v); exact {
			t.Errorf("%#v has an exact key", v)
		}
	}
}
