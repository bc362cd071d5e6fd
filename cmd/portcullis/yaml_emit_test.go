package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// yamlPieces are the strings the random documents are made of: what the library
// quotes, resolves to other types, orders unlike string order or folds.
var yamlPieces = []string{
	"a", "B", "_x", "x_1", "x10", "x9", "x09", "a.b", "@type", "%START_TIME%", "-lead", "/", "/api",
	"true", "True", "yes", "n", "off", "null", "~", "", " ", "10s", "0.25s", "1e3", "0x1F", "1_000", "08",
	"2026-11-24T05:30:00Z", "a: b", "a #b", "it's", `say "hi"`, "tab\there", "é", "line\nbreak", "end\n",
	"[x]", "{y}", "*star", "&amp", "!bang", "|pipe", ">gt", "?q", ",c", "`tick",
}

func randomWords(r *rand.Rand) string {
	var b strings.Builder
	for n := r.IntN(40); n > 0; n-- {
		b.WriteString(yamlPieces[r.IntN(len(yamlPieces))])
		if r.IntN(3) > 0 {
			b.WriteString(" ")
		}
	}
	return b.String()
}

// randomKey is a key made of yamlPieces without a 0: the library orders keys with
// zeros among digits inconsistently (its own output for {"080", "0x1F2", "1_0001"}
// changes from run to run), which no emitter could match.
func randomKey(r *rand.Rand) string {
	for {
		k := yamlPieces[r.IntN(len(yamlPieces))] + fmt.Sprint(1+r.IntN(3))
		if !strings.Contains(k, "0") {
			return k
		}
	}
}

func randomValue(r *rand.Rand, depth int) any {
	switch k := r.IntN(10); {
	case depth > 4 || k < 4:
		switch r.IntN(7) {
		case 0:
			return r.IntN(100000) - 50
		case 1:
			return r.Float64() * 1000
		case 2:
			return r.IntN(2) == 0
		case 3:
			return nil
		case 4:
			return randomWords(r)
		}
		return yamlPieces[r.IntN(len(yamlPieces))]
	case k < 7:
		m := map[string]any{}
		for n := r.IntN(6); n > 0; n-- {
			m[randomKey(r)] = randomValue(r, depth+1)
		}
		return m
	default:
		var s []any
		for n := r.IntN(4); n > 0; n-- {
			s = append(s, randomValue(r, depth+1))
		}
		return s
	}
}

// TestEmitterWritesTheLibrarysBytes: for random documents of tricky keys and strings
// at every depth, what the emitter writes (or, where it declines, the library's
// conversion nested as deep) is byte for byte the library's conversion of the whole
// document; and the emitter declines only a minority of them.
func TestEmitterWritesTheLibrarysBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	e := &yamlEmitter{}
	emitted := 0
	const docs = 3000
	for i := range docs {
		key, value, depth := strings.ReplaceAll(randomWords(r), "0", ""), randomValue(r, 0), r.IntN(8)
		var doc any = map[string]any{key: value}
		for range depth {
			doc = map[string]any{"a": doc}
		}
		want, err := toYAML(doc)
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		got.WriteString(strings.Repeat("a:\n", min(depth, 1)))
		for d := 1; d < depth; d++ {
			got.WriteString(strings.Repeat("  ", d) + "a:\n")
		}
		if err := e.entry(&got, key, json.RawMessage(js), 2*depth); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("document %d differs:\n--- got\n%s\n--- want\n%s", i, got.Bytes(), want)
		}
		if e.emitEntry(&bytes.Buffer{}, key, js, 2*depth) == nil {
			emitted++
		}
	}
	if emitted < docs/5 {
		t.Errorf("the emitter wrote %d of %d documents itself; the rest went through the library", emitted, docs)
	}
	t.Logf("emitted %d of %d documents without the library", emitted, docs)
}

// TestEmitterSequenceItemsAreTheLibrarys: the same for Envoy-resource-like items of a
// sequence four columns in, as writeXDSYAML writes them.
func TestEmitterSequenceItemsAreTheLibrarys(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	e := &yamlEmitter{}
	for i := range 2000 {
		value := randomValue(r, 0)
		js, err := json.Marshal(value)
		if err != nil {
			t.Fatal(err)
		}
		want, err := toYAML(map[string]any{"a": map[string]any{"a": []any{value}}})
		if err != nil {
			t.Fatal(err)
		}
		got := bytes.NewBufferString("a:\n  a:\n")
		if err := e.item(got, js, 2, func() (any, error) { return value, nil }); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("item %d differs:\n--- got\n%s\n--- want\n%s", i, got.Bytes(), want)
		}
	}
}

// TestPlainWordsAreWhatTheLibraryWritesPlain: every string plainWords passes, the library
// writes unquoted (folded, past its line width, at single spaces, which unfold joins
// back); strings it must not pass it does not.
func TestPlainWordsAreWhatTheLibraryWritesPlain(t *testing.T) {
	plain := []string{
		"Backend accepted", "waiting for the DNS guard to resolve api-1.example.com", "a - b", "A 1e3", "a .5",
		"no route for caller", "x yes", "a 0x1F b", "all backendRefs resolved", "route accepted",
		strings.Repeat("word-1.example.com ", 12) + "end",
		"8080/api-0.example.com", "443/HTTPS", "1/2", "0/x", "1e3/x", "0x1F/y", "10/", "1_000/a", "2026-11-24/a", "1.5/x", "08/09", "1/2/3",
	}
	for _, s := range plain {
		if !plainWords(s) {
			t.Errorf("plainWords(%q) = false", s)
			continue
		}
		out, err := yaml.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := unfold(strings.TrimSuffix(string(out), "\n")); got != s {
			t.Errorf("the library writes %q as %q", s, out)
		}
	}
	for _, s := range []string{"", " a", "a ", "a  b", "1 a", "_a b", "yes", "a: b", "a #b", "a 'b'", "a,b c", "a b\nc", "é b", "a\tb", "-a b", "1 /a", "1/a b", "12", "1.5", "1e3", "2026-11-24", "1:20/"} {
		if plainWords(s) {
			t.Errorf("plainWords(%q) = true", s)
		}
	}
}
