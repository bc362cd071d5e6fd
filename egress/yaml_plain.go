package egress

import (
	"bytes"
	"slices"
	"strings"
)

// plainYAMLToJSON converts the plainest YAML documents to exactly the JSON
// sigs.k8s.io/yaml's YAMLToJSON gives for them, without the YAML library: parsing was
// two thirds of loading 20,000 objects. It reads block mappings and block sequences
// (a sequence may sit at its key's indentation, and an item may open a mapping on its
// dash's line) of single-line plain scalars: strings that start with a letter and
// hold only letters, digits and . _ / -, and decimal integers. Anything else (a
// comment, quotes, flow collections, anchors, tags, block scalars, tabs, a bare key, a
// boolean or null word, a duplicate key, a number the library might read otherwise)
// makes it decline (ok false), and the caller converts with the library.
func plainYAMLToJSON(doc []byte) (js []byte, ok bool) {
	p := plainParser{}
	for line := range bytes.Lines(doc) {
		text := strings.TrimRight(string(line), "\r\n")
		if strings.TrimLeft(text, " ") == "" || text == "---" {
			continue
		}
		p.lines = append(p.lines, text)
	}
	if len(p.lines) == 0 {
		return nil, false
	}
	v, ok := p.block(0)
	if !ok || p.at != len(p.lines) {
		return nil, false
	}
	if _, isMap := v.(plainMap); !isMap {
		return nil, false
	}
	return appendPlainJSON(nil, v), true
}

// plainMap is a mapping; its JSON has the keys sorted, as encoding/json writes maps.
type plainMap map[string]any

type plainParser struct {
	lines []string
	at    int
}

// indent is the indentation of the line at i, and the line without it.
func (p *plainParser) indent(i int) (int, string) {
	l := p.lines[i]
	rest := strings.TrimLeft(l, " ")
	return len(l) - len(rest), rest
}

// block reads the mapping or sequence whose first line is the next one, at indent.
func (p *plainParser) block(indent int) (any, bool) {
	if p.at >= len(p.lines) {
		return nil, false
	}
	n, rest := p.indent(p.at)
	if n != indent {
		return nil, false
	}
	if rest == "-" || strings.HasPrefix(rest, "- ") {
		return p.sequence(indent)
	}
	return p.mapping(indent, "")
}

// mapping reads entries at indent; first, when not "", is the first entry's text (on a
// sequence item's line, after its dash).
func (p *plainParser) mapping(indent int, first string) (any, bool) {
	m := plainMap{}
	for {
		var entry string
		if first != "" {
			entry, first = first, ""
		} else {
			if p.at >= len(p.lines) {
				return m, true
			}
			n, rest := p.indent(p.at)
			if n < indent {
				return m, true
			}
			if n > indent || strings.HasPrefix(rest, "-") {
				return nil, false
			}
			entry = rest
		}
		p.at++
		key, value, ok := strings.Cut(entry, ":")
		if !ok || !PlainYAMLWord(key) {
			return nil, false
		}
		if _, dup := m[key]; dup {
			return nil, false
		}
		v, ok := p.value(indent, value)
		if !ok {
			return nil, false
		}
		m[key] = v
	}
}

// value reads what follows "key:": a scalar after a space, or a block below (a
// sequence may start at the key's own indentation).
func (p *plainParser) value(indent int, after string) (any, bool) {
	if after != "" {
		if after[0] != ' ' {
			return nil, false
		}
		return plainScalar(after[1:])
	}
	if p.at >= len(p.lines) {
		return nil, false // a bare key: null
	}
	n, rest := p.indent(p.at)
	switch {
	case n > indent:
		return p.block(n)
	case n == indent && (rest == "-" || strings.HasPrefix(rest, "- ")):
		return p.sequence(indent)
	}
	return nil, false
}

// sequence reads items at indent: a scalar or a mapping opened on the dash's line.
func (p *plainParser) sequence(indent int) (any, bool) {
	s := []any{}
	for p.at < len(p.lines) {
		n, rest := p.indent(p.at)
		if n < indent || (n == indent && !strings.HasPrefix(rest, "- ")) {
			break
		}
		if n > indent {
			return nil, false
		}
		item := rest[2:]
		if strings.Contains(item, ":") {
			v, ok := p.mapping(indent+2, item)
			if !ok {
				return nil, false
			}
			s = append(s, v)
			continue
		}
		p.at++
		v, ok := plainScalar(item)
		if !ok {
			return nil, false
		}
		s = append(s, v)
	}
	return s, true
}

// plainScalar is a string or integer the library reads the same way, or not ok.
func plainScalar(text string) (any, bool) {
	switch {
	case PlainYAMLWord(text):
		return text, true
	case plainInteger(text):
		return plainNumber(text), true
	}
	return nil, false
}

// plainNumber is an integer's text, written as it is.
type plainNumber string

// PlainYAMLWord tells whether YAML 1.1 (go-yaml v2, which sigs.k8s.io/yaml uses) reads
// and writes s as a plain string whatever its context: a letter, then letters, digits
// and . _ / - only, and not a word it reads as a boolean or null (compared ignoring
// case, which only declines a few more strings).
func PlainYAMLWord(s string) bool {
	if s == "" || !isASCIILetter(s[0]) {
		return false
	}
	for _, c := range []byte(s) {
		if !isASCIILetter(c) && (c < '0' || c > '9') && c != '.' && c != '_' && c != '/' && c != '-' {
			return false
		}
	}
	switch strings.ToLower(s) {
	case "y", "yes", "n", "no", "true", "false", "on", "off", "null":
		return false
	}
	return true
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// plainInteger: decimal digits without a leading zero (YAML 1.1 reads 0-led numbers
// as octal), short enough for the library to keep exact.
func plainInteger(s string) bool {
	if s == "" || len(s) > 15 || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// appendPlainJSON writes v as encoding/json does (no value here needs escaping).
func appendPlainJSON(b []byte, v any) []byte {
	switch x := v.(type) {
	case string:
		return append(append(append(b, '"'), x...), '"')
	case plainNumber:
		return append(b, x...)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPlainJSON(b, e)
		}
		return append(b, ']')
	case plainMap:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendPlainJSON(append(appendPlainJSON(b, k), ':'), x[k])
		}
		return append(b, '}')
	}
	panic("plainYAMLToJSON: unexpected value")
}
