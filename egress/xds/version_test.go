package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
)

// TestVersionHashesTheWholeCanonicalOrder checks that hashing through a small buffer
// gives the hash of every field in one piece, for analyses from empty to many times the
// buffer, with names long and short, and that any name or digest changes it.
func TestVersionHashesTheWholeCanonicalOrder(t *testing.T) {
	for _, n := range []int{0, 1, 100, 5000} {
		a := &analysis{types: []sorted{{typeURL: "type.example/A"}, {typeURL: "type.example/B"}}}
		for i := range n {
			st := &a.types[i%2]
			st.names = append(st.names, fmt.Sprintf("%s-%d", strings.Repeat("n", i%300), i))
			f := &facts{}
			f.digest[0], f.digest[31] = byte(i), byte(i>>8)
			st.facts = append(st.facts, f)
		}
		if got, want := a.version(), oneShotVersion(a); got != want {
			t.Fatalf("%d resources: version %s; hashing in one piece gives %s", n, got, want)
		}
		if n == 0 {
			continue
		}
		before := a.version()
		a.types[0].facts[0].digest[5]++
		if a.version() == before {
			t.Fatalf("%d resources: a digest changed, the version did not", n)
		}
		a.types[0].names[0] += "x"
		if a.version() == before {
			t.Fatalf("%d resources: a name changed, the version did not", n)
		}
	}
}

// oneShotVersion is the version computed in one piece: each type's fields hashed
// whole, then the type URLs and those digests.
func oneShotVersion(a *analysis) string {
	var all []byte
	for _, st := range a.types {
		buf := appendField(nil, st.typeURL)
		for i, name := range st.names {
			buf = appendField(buf, name)
			buf = append(buf, st.facts[i].digest[:]...)
		}
		d := sha256.Sum256(buf)
		all = append(appendField(all, st.typeURL), d[:]...)
	}
	sum := sha256.Sum256(all)
	return hex.EncodeToString(sum[:])[:versionLength]
}

// TestVersionsKeepTheDigestsOfTypesThatDidNotChange: a type whose facts are the last
// analysis's very facts keeps its digest without hashing, and the versions are those
// of hashing everything; a type with one fact replaced is hashed again.
func TestVersionsKeepTheDigestsOfTypesThatDidNotChange(t *testing.T) {
	prev := &analysis{types: []sorted{{typeURL: "type.example/A"}, {typeURL: "type.example/B"}}}
	for i := range 100 {
		st := &prev.types[i%2]
		st.names = append(st.names, fmt.Sprint(i))
		f := &facts{}
		f.digest[0] = byte(i)
		st.facts = append(st.facts, f)
	}
	_, prev.digests = prev.versions(nil)
	next := &analysis{types: []sorted{prev.types[0], prev.types[1]}}
	next.types[1].facts = append([]*facts(nil), prev.types[1].facts...)
	changed := &facts{}
	changed.digest[0] = 0xff
	next.types[1].facts[3] = changed
	reused, digests := next.versions(prev)
	if reused != oneShotVersion(next) {
		t.Fatalf("version %s with reuse, %s hashed whole", reused, oneShotVersion(next))
	}
	if digests["type.example/A"] != prev.digests["type.example/A"] {
		t.Error("the unchanged type's digest changed")
	}
	if digests["type.example/B"] == prev.digests["type.example/B"] {
		t.Error("the changed type kept its digest")
	}
	prev.digests["type.example/A"] = [32]byte{1} // a reused digest is prev's, not recomputed
	if _, d := next.versions(prev); d["type.example/A"] != [32]byte{1} {
		t.Error("the unchanged type was hashed again")
	}
}

// TestSortByNameOrdersAndRefusesDuplicates sorts resources handed over out of order and
// in order, and refuses two with one name either way.
func TestSortByNameOrdersAndRefusesDuplicates(t *testing.T) {
	cluster := func(name string) types.Resource { return &clusterv3.Cluster{Name: name} }
	tests := []struct {
		name    string
		in      []string
		want    string
		wantErr bool
	}{
		{"in order", []string{"a", "b", "c"}, "a b c", false},
		{"out of order", []string{"c", "a", "b"}, "a b c", false},
		{"duplicate in order", []string{"a", "b", "b"}, "", true},
		{"duplicate out of order", []string{"b", "a", "b"}, "", true},
	}
	for _, tc := range tests {
		var rs []types.Resource
		for _, n := range tc.in {
			rs = append(rs, cluster(n))
		}
		st, err := sortByName("type.example/Cluster", rs, nil)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: error %v; want one: %v", tc.name, err, tc.wantErr)
		}
		if err != nil {
			continue
		}
		if got := strings.Join(st.names, " "); got != tc.want {
			t.Errorf("%s: names %s; want %s", tc.name, got, tc.want)
		}
		for i, r := range st.items {
			if r.(*clusterv3.Cluster).Name != st.names[i] {
				t.Errorf("%s: item %d is %s under the name %s", tc.name, i, r.(*clusterv3.Cluster).Name, st.names[i])
			}
		}
	}
}
