package crdvalidate

import (
	"encoding/json"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// TestValueKeysTellValuesApart: the remembered acceptances are keyed by appendValueKey, so two
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
			a, okA := appendValueKey(nil, c.a)
			b, okB := appendValueKey(nil, c.b)
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
	first, _ := appendValueKey(nil, m)
	for range 20 {
		if again, _ := appendValueKey(nil, m); string(again) != string(first) {
			t.Fatalf("the key of one map changed: %q then %q", first, again)
		}
	}
}

// TestValuesNotFromJSONAreNotRemembered: a value the decoder does not make (an int, a
// struct) has no exact key, so nothing is remembered for it.
func TestValuesNotFromJSONAreNotRemembered(t *testing.T) {
	for _, v := range []any{1, map[string]any{"a": 1}, []any{struct{}{}}} {
		if _, exact := appendValueKey(nil, v); exact {
			t.Errorf("%#v has an exact key", v)
		}
	}
}

// TestProjectionsKeepWhatRulesRead: the memo takes two values as one when their
// projections on the rules' reads are equal, so two values a rule could tell apart must
// project differently; values that differ only where no rule looks should project the
// same (that is the point). Each case is a rule and pairs of values of self.
func TestProjectionsKeepWhatRulesRead(t *testing.T) {
	type pair struct{ a, b string }
	cases := []struct {
		rule      string
		same      []pair
		different []pair
	}{
		{rule: `self.a == 'x'`,
			same:      []pair{{`{"a":"x","b":1}`, `{"a":"x","b":2}`}},
			different: []pair{{`{"a":"x"}`, `{"a":"y"}`}, {`{"a":"x"}`, `{}`}, {`{"a":"x"}`, `{"a":null}`}}},
		{rule: `has(self.a)`,
			same:      []pair{{`{"a":1}`, `{"a":2}`}, {`{"a":{"b":1}}`, `{"a":{}}`}},
			different: []pair{{`{"a":1}`, `{}`}, {`{"a":1}`, `{"b":1}`}}},
		{rule: `self.l.all(e, e.n > 0)`,
			same:      []pair{{`{"l":[{"n":1,"m":1}]}`, `{"l":[{"n":1,"m":2}]}`}},
			different: []pair{{`{"l":[{"n":1}]}`, `{"l":[{"n":1},{"n":1}]}`}, {`{"l":[{"n":1}]}`, `{"l":[{"n":2}]}`}}},
		{rule: `self.l.exists(e, e == 'x')`,
			different: []pair{{`{"l":["x"]}`, `{"l":["y"]}`}}},
		{rule: `self.l.all(self, self.x)`, // the iteration variable hides self
			same:      []pair{{`{"l":[{"x":true,"y":1}],"z":1}`, `{"l":[{"x":true,"y":2}],"z":2}`}},
			different: []pair{{`{"l":[{"x":true}]}`, `{"l":[{"x":false}]}`}}},
		{rule: `[self.a][0].b == 1`,
			different: []pair{{`{"a":{"b":1,"c":1}}`, `{"a":{"b":1,"c":2}}`}}},
		{rule: `self.__namespace__ == 'x'`,
			different: []pair{{`{"namespace":"x"}`, `{"namespace":"y"}`}}},
		{rule: `has(self.__namespace__)`,
			different: []pair{{`{"namespace":"x"}`, `{}`}}},
		{rule: `size(self.m) == 1`,
			same:      []pair{{`{"m":{"a":1}}`, `{"m":{"a":2}}`}, {`{"m":[1]}`, `{"m":[2]}`}},
			different: []pair{{`{"m":[1]}`, `{"m":[1,1]}`}}},
		{rule: `self.m.all(k, k.startsWith('x'))`,
			different: []pair{{`{"m":{"xa":1}}`, `{"m":{"ya":1}}`}}},
		{rule: `self.m[self.k] == 1`,
			different: []pair{{`{"m":{"a":1,"b":2},"k":"a"}`, `{"m":{"a":1,"b":2},"k":"b"}`}, {`{"m":{"a":1},"k":"a"}`, `{"m":{"a":2},"k":"a"}`}}},
		{rule: `cel.bind(v, self.a, v.b == 1)`,
			different: []pair{{`{"a":{"b":1,"c":1}}`, `{"a":{"b":1,"c":2}}`}}},
		{rule: `self.?a.orValue(1) == 1`,
			different: []pair{{`{"a":1,"b":1}`, `{"a":1,"b":2}`}}},
		{rule: `self.m.all(k, v, v > 0)`,
			different: []pair{{`{"m":{"a":1}}`, `{"m":{"a":2}}`}}},
		{rule: `self.a.b.c == 1`,
			same:      []pair{{`{"a":{"b":{"c":1,"d":1}}}`, `{"a":{"b":{"c":1,"d":2}}}`}},
			different: []pair{{`{"a":{"b":{"c":1}}}`, `{"a":{"b":{"c":2}}}`}, {`{"a":{"b":{"c":1}}}`, `{"a":[1]}`}}},
		{rule: `self == oldSelf`,
			different: []pair{{`{"a":1}`, `{"a":2}`}}},
		{rule: `self.a ==`, // does not parse: all of self
			different: []pair{{`{"b":1}`, `{"b":2}`}}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			r := readsOf(&structuralschema.Structural{ValidationExtensions: structuralschema.ValidationExtensions{XValidations: apiextensionsv1.ValidationRules{{Rule: c.rule}}}})
			key := func(js string) string {
				var v any
				if err := json.Unmarshal([]byte(js), &v); err != nil {
					t.Fatal(err)
				}
				b, exact := project(nil, toInt64(v), r)
				if !exact {
					t.Fatalf("%s has no exact projection", js)
				}
				return string(b)
			}
			for _, p := range c.same {
				if key(p.a) != key(p.b) {
					t.Errorf("%s and %s project differently; the rule reads nothing that tells them apart", p.a, p.b)
				}
			}
			for _, p := range c.different {
				if key(p.a) == key(p.b) {
					t.Errorf("%s and %s project the same; the rule can tell them apart", p.a, p.b)
				}
			}
		})
	}
}

// toInt64 makes whole numbers int64, as the API server's decoder does.
func toInt64(v any) any {
	switch x := v.(type) {
	case float64:
		if x == float64(int64(x)) {
			return int64(x)
		}
	case []any:
		for i := range x {
			x[i] = toInt64(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = toInt64(x[k])
		}
	}
	return v
}

// TestMemoRateGivesUpOnNodesThatNeverRepeat: a node keeps its memo while it is on trial
// or hits often enough, and loses it once it has missed nearly every time.
func TestMemoRateGivesUpOnNodesThatNeverRepeat(t *testing.T) {
	var never, often memoRate
	for i := range memoTrial {
		if !never.worthIt() || !often.worthIt() {
			t.Fatalf("a node lost its memo on trial, after %d lookups", i)
		}
		never.hit(false)
		often.hit(i%4 == 0)
	}
	if never.worthIt() {
		t.Error("a node that never hit kept its memo after the trial")
	}
	if !often.worthIt() {
		t.Error("a node that hit one time in four lost its memo")
	}
}
