package main

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
)

// decodeJSON decodes a document as encoding/json does into an `any` with UseNumber
// (objects as map[string]any, arrays as []any, numbers as json.Number): the emitter
// decodes every Envoy resource and status protojson or encoding/json wrote, and the
// library's reflective decoder was a quarter of `portcullis translate`'s output time.
// jsonReader handles what those encoders write (any spacing, the usual escapes, valid
// UTF-8); anything else, it leaves to encoding/json, whose value or error is then the
// answer.
func decodeJSON(js []byte) (any, error) {
	r := jsonReader{in: js}
	if v, ok := r.value(); ok && r.end() {
		return v, nil
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v)
}

// jsonReader reads one JSON value; each method reports false on anything it does not
// read exactly as encoding/json would.
type jsonReader struct {
	in  []byte
	pos int
}

func (r *jsonReader) space() {
	for r.pos < len(r.in) {
		switch r.in[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

// end reports whether only spacing is left.
func (r *jsonReader) end() bool {
	r.space()
	return r.pos == len(r.in)
}

func (r *jsonReader) value() (any, bool) {
	r.space()
	if r.pos >= len(r.in) {
		return nil, false
	}
	switch c := r.in[r.pos]; {
	case c == '{':
		return r.object()
	case c == '[':
		return r.array()
	case c == '"':
		return r.str()
	case c == '-' || c >= '0' && c <= '9':
		return r.number()
	}
	for _, lit := range jsonLiterals {
		if bytes.HasPrefix(r.in[r.pos:], []byte(lit.text)) {
			r.pos += len(lit.text)
			return lit.v, true
		}
	}
	return nil, false
}

var jsonLiterals = []struct {
	text string
	v    any
}{{"true", true}, {"false", false}, {"null", nil}}

func (r *jsonReader) object() (any, bool) {
	r.pos++ // {
	m := map[string]any{}
	if r.space(); r.pos < len(r.in) && r.in[r.pos] == '}' {
		r.pos++
		return m, true
	}
	for {
		r.space()
		if r.pos >= len(r.in) || r.in[r.pos] != '"' {
			return nil, false
		}
		k, ok := r.str()
		if r.space(); !ok || r.pos >= len(r.in) || r.in[r.pos] != ':' {
			return nil, false
		}
		r.pos++
		v, ok := r.value()
		if !ok {
			return nil, false
		}
		m[k.(string)] = v
		if done, ok := r.next('}'); !ok || done {
			return m, ok
		}
	}
}

func (r *jsonReader) array() (any, bool) {
	r.pos++ // [
	a := []any{}
	if r.space(); r.pos < len(r.in) && r.in[r.pos] == ']' {
		r.pos++
		return a, true
	}
	for {
		v, ok := r.value()
		if !ok {
			return nil, false
		}
		a = append(a, v)
		if done, ok := r.next(']'); !ok || done {
			return a, ok
		}
	}
}

// next reads the comma before another member, or the closing bracket (done).
func (r *jsonReader) next(closing byte) (done, ok bool) {
	r.space()
	if r.pos >= len(r.in) {
		return false, false
	}
	switch r.in[r.pos] {
	case ',':
		r.pos++
		return false, true
	case closing:
		r.pos++
		return true, true
	}
	return false, false
}

// str reads a string of valid UTF-8 with escapes other than \u (those, and control
// characters, go to encoding/json).
func (r *jsonReader) str() (any, bool) {
	r.pos++ // "
	start := r.pos
	var out []byte // nil until an escape is met
	for r.pos < len(r.in) {
		c := r.in[r.pos]
		switch {
		case c == '"':
			s := r.in[start:r.pos]
			r.pos++
			if out != nil {
				s = append(out, s...)
			}
			if !utf8.Valid(s) {
				return nil, false
			}
			return string(s), true
		case c < 0x20:
			return nil, false
		case c == '\\':
			e, ok := unescaped(r.in, r.pos)
			if !ok {
				return nil, false
			}
			out = append(append(out, r.in[start:r.pos]...), e)
			r.pos += 2
			start = r.pos
		default:
			r.pos++
		}
	}
	return nil, false
}

// unescaped is the byte a two-character escape at in[i] stands for.
func unescaped(in []byte, i int) (byte, bool) {
	if i+1 >= len(in) {
		return 0, false
	}
	switch in[i+1] {
	case '"', '\\', '/':
		return in[i+1], true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// number reads a number by JSON's grammar, kept as written.
func (r *jsonReader) number() (any, bool) {
	start := r.pos
	if r.in[r.pos] == '-' {
		r.pos++
	}
	switch {
	case r.pos < len(r.in) && r.in[r.pos] == '0':
		r.pos++
	case !r.digits():
		return nil, false
	}
	if r.pos < len(r.in) && r.in[r.pos] == '.' {
		r.pos++
		if !r.digits() {
			return nil, false
		}
	}
	if r.pos < len(r.in) && (r.in[r.pos] == 'e' || r.in[r.pos] == 'E') {
		r.pos++
		if r.pos < len(r.in) && (r.in[r.pos] == '+' || r.in[r.pos] == '-') {
			r.pos++
		}
		if !r.digits() {
			return nil, false
		}
	}
	return json.Number(r.in[start:r.pos]), true
}

func (r *jsonReader) digits() bool {
	start := r.pos
	for r.pos < len(r.in) && r.in[r.pos] >= '0' && r.in[r.pos] <= '9' {
		r.pos++
	}
	return r.pos > start
}
