package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/maphash"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress"
)

// yamlEmitter writes JSON values as YAML with exactly the bytes sigs.k8s.io/yaml's
// JSONToYAML gives for them (block style, keys in the YAML library's order, sequences
// not indented under their key), without its detour through the YAML parser: that
// detour was most of `portcullis translate`'s time on 10,000 routes. It writes
// structure itself and asks the YAML library only about what it cannot be sure of: how
// a key or an unusual string is quoted, and the order of a set of keys, each answer
// cached (resources of one type share their keys and most of their odd strings).
// Whatever it cannot reproduce for certain (a number that is not a plain integer, a
// double-quoted string it would fold, a multi-line string in a sequence, a key that is
// not a one-line simple key) makes it return errNotEmittable, and the caller converts
// that piece the slow way.
type yamlEmitter struct {
	keys   sync.Map // string -> string: a key as written before its colon
	quoted sync.Map // string -> string: a string value as written, or "" if not emittable
	orders sync.Map // keySetHash -> keyOrder: keys in the YAML library's order
	blocks sync.Map // string -> string: a string with line breaks as written alone
	// slow counts the pieces written by the library's conversion instead.
	slow atomic.Int64
}

// errNotEmittable says the emitter cannot promise the library's bytes for a value.
var errNotEmittable = errors.New("value needs the YAML library's conversion")

// emitItem appends the YAML of one JSON document as an item of a sequence at indent.
func (e *yamlEmitter) emitItem(buf *bytes.Buffer, js []byte, indent int) error {
	v, err := decodeJSON(js)
	if err != nil {
		return err
	}
	return e.emitItemValue(buf, v, indent)
}

// emitItemValue appends the YAML of a decoded JSON value as an item of a sequence at
// indent.
func (e *yamlEmitter) emitItemValue(buf *bytes.Buffer, v any, indent int) error {
	buf.WriteString(strings.Repeat(" ", indent))
	buf.WriteString("- ")
	return e.value(buf, v, indent+2, true)
}

// value writes v. inline says the cursor already stands where v's first line goes
// (after "- "); otherwise it stands after "key:".
func (e *yamlEmitter) value(buf *bytes.Buffer, v any, indent int, inline bool) error {
	switch x := v.(type) {
	case map[string]any:
		if len(x) == 0 {
			return e.scalar(buf, "{}", inline)
		}
		if !inline {
			buf.WriteByte('\n')
		}
		return e.mapping(buf, x, indent, inline)
	case []any:
		if len(x) == 0 {
			return e.scalar(buf, "[]", inline)
		}
		if !inline {
			buf.WriteByte('\n')
			indent -= 2 // a sequence under a key is not indented
		}
		return e.sequence(buf, x, indent, inline)
	case string:
		if !inline {
			return errNotEmittable // keyValue writes strings after a key
		}
		q, err := e.strAt(x, indent, indent)
		if err != nil {
			return err
		}
		return e.scalar(buf, q, inline)
	default:
		s, err := e.scalarText(x)
		if err != nil {
			return err
		}
		return e.scalar(buf, s, inline)
	}
}

func (e *yamlEmitter) scalar(buf *bytes.Buffer, s string, inline bool) error {
	if !inline {
		buf.WriteByte(' ')
	}
	buf.WriteString(s)
	buf.WriteByte('\n')
	return nil
}

// mapping writes a non-empty mapping's entries at indent, the first on the current
// line when inline.
func (e *yamlEmitter) mapping(buf *bytes.Buffer, m map[string]any, indent int, inline bool) error {
	keys, err := e.order(slices.Collect(maps.Keys(m)))
	if err != nil {
		return err
	}
	for i, k := range keys {
		if i > 0 || !inline {
			buf.WriteString(strings.Repeat(" ", indent))
		}
		key, err := e.key(k)
		if err != nil {
			return err
		}
		buf.WriteString(key)
		buf.WriteByte(':')
		if err := e.keyValue(buf, m[k], indent, key); err != nil {
			return err
		}
	}
	return nil
}

// sequence writes a non-empty sequence's items at indent, the first on the current
// line when inline.
func (e *yamlEmitter) sequence(buf *bytes.Buffer, s []any, indent int, inline bool) error {
	for i, item := range s {
		if i > 0 || !inline {
			buf.WriteString(strings.Repeat(" ", indent))
		}
		buf.WriteString("- ")
		if err := e.value(buf, item, indent+2, true); err != nil {
			return err
		}
	}
	return nil
}

// scalarText is a JSON scalar as the library writes it.
func (e *yamlEmitter) scalarText(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "null", nil
	case bool:
		if x {
			return "true", nil
		}
		return "false", nil
	case json.Number:
		if !plainInteger(string(x)) {
			return "", errNotEmittable
		}
		return string(x), nil
	}
	return "", errNotEmittable
}

// plainInteger tells whether a JSON number is an integer the library reads and writes
// back digit for digit: no fraction or exponent, no leading zero, within int64.
func plainInteger(s string) bool {
	digits := strings.TrimPrefix(s, "-")
	if digits == "" || len(digits) > 18 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range []byte(digits) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// str is a string value as the library writes it: plain when nothing in it could be
// read back as anything but the same string, otherwise as the library quotes it.
func (e *yamlEmitter) str(s string) (string, error) {
	if plainWords(s) {
		return s, nil
	}
	if q, ok := e.quoted.Load(s); ok {
		return checked(q.(string))
	}
	q := ""
	if out, err := yaml.Marshal(s); err == nil && !isBlockScalar(out) {
		q = unfold(strings.TrimSuffix(string(out), "\n"))
	}
	e.quoted.Store(s, q)
	return checked(q)
}

// unfold is the one-line form of a scalar the library wrote alone, which it folds
// like any other past its line width: it joins the lines back, and returns "" unless
// folding the joined line again gives back what the library wrote (plain and
// single-quoted scalars fold only at single spaces; double quotes fold otherwise).
func unfold(out string) string {
	first, rest, folded := strings.Cut(out, "\n")
	if !folded {
		return out
	}
	if out[0] == '"' {
		return ""
	}
	lines := strings.Split(rest, "\n")
	indent := len(lines[0]) - len(strings.TrimLeft(lines[0], " "))
	joined := first
	for _, l := range lines {
		joined += " " + l[min(indent, len(l)):]
	}
	if fold(joined, 0, indent) != out {
		return ""
	}
	return joined
}

func checked(q string) (string, error) {
	if q == "" {
		return "", errNotEmittable
	}
	return q, nil
}

func isBlockScalar(out []byte) bool { return out[0] == '|' || out[0] == '>' }

// safePlain tells whether s is written unquoted whatever its context (the rule the
// loader reads plain YAML by).
func safePlain(s string) bool { return egress.PlainYAMLWord(s) }

// plainWords tells whether a string value is written unquoted: safePlain words
// separated by single spaces, the first starting with a letter (a status message such
// as "waiting for the DNS guard to resolve api.example.com"). No such string is a
// number, a boolean, null or a date to YAML 1.1, none holds ": " or " #", and the
// library does not quote it; where it is too long for a line, strAt folds it.
func plainWords(s string) bool {
	if s != "" && s[0] >= '0' && s[0] <= '9' && strings.Contains(s, "/") && safePlain("a"+s) {
		return true // a path such as "8080/api.example.com": no number, date or time holds a '/'
	}
	if !strings.Contains(s, " ") {
		return safePlain(s)
	}
	if c := s[0]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return false
	}
	for _, w := range strings.Split(s, " ") {
		if w == "" || !safePlain("a"+w) {
			return false
		}
	}
	return true
}

// key is k as the library writes a mapping key, learnt from the library once per key.
func (e *yamlEmitter) key(k string) (string, error) {
	if safePlain(k) {
		return k, nil
	}
	if q, ok := e.keys.Load(k); ok {
		return checked(q.(string))
	}
	out, err := yaml.Marshal(map[string]int{k: 0})
	q, ok := "", false
	if err == nil && bytes.Count(out, []byte("\n")) == 1 && !bytes.HasPrefix(out, []byte("? ")) {
		q, ok = strings.CutSuffix(string(out), ": 0\n")
	}
	if !ok {
		q = ""
	}
	e.keys.Store(k, q)
	return checked(q)
}

// order returns m's keys in the order the library writes them, learnt from the library
// once per set of keys: its order is not plain string order (runs of digits compare as
// numbers, letters after other characters).
func (e *yamlEmitter) order(keys []string) ([]string, error) {
	set := keySetHash(keys)
	if o, ok := e.orders.Load(set); ok && sameKeys(o.(keyOrder), keys) {
		return o.(keyOrder).order, nil
	}
	o, err := e.libraryOrder(slices.Sorted(slices.Values(keys)))
	if err != nil {
		return nil, err
	}
	e.orders.Store(set, keyOrder{order: o, set: setOf(o)})
	return o, nil
}

// keyOrder is a set of keys in the library's order. Mappings are looked up by a hash of
// their key set, not a sorted copy of it (sorting and joining the keys of every
// mapping was a twentieth of `portcullis translate`); sameKeys checks the set itself.
type keyOrder struct {
	order []string
	set   map[string]struct{}
}

// keySetHash is the same for the same keys in any order.
func keySetHash(keys []string) uint64 {
	h := uint64(len(keys))
	for _, k := range keys {
		h += maphash.String(keySeed, k) // a sum: the order does not matter
	}
	return h
}

var keySeed = maphash.MakeSeed()

func sameKeys(o keyOrder, keys []string) bool {
	if len(o.order) != len(keys) {
		return false
	}
	for _, k := range keys {
		if _, ok := o.set[k]; !ok {
			return false
		}
	}
	return true
}

func setOf(keys []string) map[string]struct{} {
	set := make(map[string]struct{}, len(keys))
	for _, k := range keys {
		set[k] = struct{}{}
	}
	return set
}

// libraryOrder asks the library to write a mapping of keys and reads their order back.
func (e *yamlEmitter) libraryOrder(keys []string) ([]string, error) {
	probe := make(map[string]int, len(keys))
	written := make(map[string]string, len(keys))
	for _, k := range keys {
		probe[k] = 0
		q, err := e.key(k)
		if err != nil {
			return nil, err
		}
		written[q+": 0"] = k
	}
	out, err := yaml.Marshal(probe)
	if err != nil {
		return nil, errNotEmittable
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	order := make([]string, 0, len(keys))
	for _, line := range lines {
		k, ok := written[line]
		if !ok {
			return nil, errNotEmittable
		}
		order = append(order, k)
	}
	if len(order) != len(keys) {
		return nil, errNotEmittable
	}
	return order, nil
}

// emitEntry appends "key: <YAML of the JSON document>" as an entry of a mapping at
// indent.
func (e *yamlEmitter) emitEntry(buf *bytes.Buffer, key string, js []byte, indent int) error {
	v, err := decodeJSON(js)
	if err != nil {
		return err
	}
	q, err := e.key(key)
	if err != nil {
		return err
	}
	buf.WriteString(strings.Repeat(" ", indent))
	buf.WriteString(q)
	buf.WriteByte(':')
	return e.keyValue(buf, v, indent, q)
}

// keyValue writes the value of the key written as keyq at indent. A string that
// reaches past the library's line width (80 columns) is folded as the library folds it.
func (e *yamlEmitter) keyValue(buf *bytes.Buffer, v any, indent int, keyq string) error {
	s, ok := v.(string)
	if !ok {
		return e.value(buf, v, indent+2, false)
	}
	if strings.Contains(s, "\n") {
		return e.block(buf, s, indent+2)
	}
	q, err := e.strAt(s, indent+utf8.RuneCountInString(keyq)+2, indent+2)
	if err != nil {
		return err
	}
	return e.scalar(buf, q, false)
}

// strAt is s as the library writes it starting at column col, lines it breaks
// continuing at column indent: a string that reaches past the library's line width (80
// columns) is folded as the library folds it.
func (e *yamlEmitter) strAt(s string, col, indent int) (string, error) {
	q, err := e.str(s)
	if err != nil || !strings.Contains(s, " ") || col+utf8.RuneCountInString(q) <= lineWidth {
		return q, err
	}
	if q[0] == '"' {
		return "", errNotEmittable // double quotes fold with escapes
	}
	return fold(q, col, indent), nil
}

// lineWidth is the column past which the library breaks a scalar at a space.
const lineWidth = 80

// fold breaks a plain or single-quoted scalar that starts at column col as the
// library does: at a space, once the column is past lineWidth, unless another space
// follows or (in quotes) the space is the value's first or last character; the space
// becomes a line break and the indentation of the continuation.
func fold(q string, col, indent int) string {
	runes := []rune(q)
	quoted := runes[0] == '\''
	var b strings.Builder
	spaces := false
	for i, r := range runes {
		if r != ' ' {
			b.WriteRune(r)
			col++
			spaces = false
			continue
		}
		edge := quoted && (i == 1 || i == len(runes)-2)
		if !spaces && col > lineWidth && !edge && i+1 < len(runes) && runes[i+1] != ' ' {
			b.WriteString("\n" + strings.Repeat(" ", indent))
			col = indent
		} else {
			b.WriteRune(r)
			col++
		}
		spaces = true
	}
	return b.String()
}

// block writes a string with line breaks after a key, its lines at indent: the
// library writes such a string as a literal block, whose lines it indents under the
// key as it indents them under a document (by two); a string a block cannot hold goes
// double-quoted, which folds with escapes, and is not written here.
func (e *yamlEmitter) block(buf *bytes.Buffer, s string, indent int) error {
	q, ok := e.blocks.Load(s)
	if !ok {
		out, err := yaml.Marshal(s)
		q = ""
		if err == nil && isBlockScalar(out) {
			q = string(out)
		}
		e.blocks.Store(s, q)
	}
	text := q.(string)
	if text == "" {
		return errNotEmittable
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	buf.WriteString(" " + lines[0] + "\n")
	pad := strings.Repeat(" ", indent)
	for _, l := range lines[1:] {
		if l != "" {
			buf.WriteString(pad + strings.TrimPrefix(l, "  "))
		}
		buf.WriteByte('\n')
	}
	return nil
}
