package translate

import (
	"maps"
	"slices"
	"testing"
)

// TestSortedByKeyFollowsEveryKeyChange sorts a changing map, step after step, with one
// Cache and compares each result with a plain sort: a key added, removed or replaced by
// another (the count staying the same) must each stop the remembered order from being
// used. Another id keeps its own order.
func TestSortedByKeyFollowsEveryKeyChange(t *testing.T) {
	m := map[string]int{"b": 2, "a": 1, "c": 3}
	steps := []struct {
		name string
		id   string
		edit func()
	}{
		{"first sort", "gw clusters", func() {}},
		{"unchanged", "gw clusters", func() {}},
		{"a value changes", "gw clusters", func() { m["a"] = 10 }},
		{"a key is added", "gw clusters", func() { m["0"] = 0 }},
		{"a key is removed", "gw clusters", func() { delete(m, "b") }},
		{"a key is replaced by one sorting elsewhere", "gw clusters", func() { delete(m, "0"); m["z"] = 26 }},
		{"another id, same keys", "gw secrets", func() {}},
		{"another id after a replacement", "gw secrets", func() { delete(m, "a"); m["b"] = 2 }},
		{"the first id again, its order stale", "gw clusters", func() {}},
		{"emptied", "gw clusters", func() { clear(m) }},
	}
	cache := NewCache()
	for i, step := range steps {
		step.edit()
		got := sortedByKey(cache, uint64(i+1), step.id, m, func(v int) int { return v })
		var want []int
		for _, k := range slices.Sorted(maps.Keys(m)) {
			want = append(want, m[k])
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: got %v; want %v", step.name, got, want)
		}
	}
}
