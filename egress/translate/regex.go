package translate

import (
	"errors"
	"fmt"
	"regexp/syntax"
	"strconv"
	"strings"
	"unicode"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// checkRegex refuses a regular expression Envoy would reject, which would hold back the
// configuration of every tenant of the Gateway: one that is not valid RE2 syntax, and one
// whose RE2 program may be larger than ir.MaxRegexProgramSize, the limit Envoy enforces
// (runtime key re2.max_program_size.error_level, set by the bootstrap).
//
// Go's regexp/syntax is a port of RE2's parser, so it accepts the same syntax except for
// a few escapes (checkRE2Escapes). It compiles to a different program, though: one
// instruction per character class where RE2 compiles byte ranges, and Alt instructions
// where RE2's flattened program lists their branches. re2ProgramSize therefore estimates
// from above; TestRegexEstimateBoundsEnvoy shows, with a real Envoy, that the estimate is
// never below RE2's own count, and TestRegexCheckAgainstEnvoy that Envoy accepts every
// expression this check accepts.
func checkRegex(pattern string) error {
	if pattern == "" {
		return errors.New("the regular expression is empty")
	}
	size, err := re2SizeBound(pattern)
	if err != nil {
		return fmt.Errorf("invalid regular expression: %v", err)
	}
	if err := checkRE2Escapes(pattern); err != nil {
		return fmt.Errorf("invalid regular expression for Envoy's RE2: %v", err)
	}
	if size > ir.MaxRegexProgramSize {
		return fmt.Errorf("the regular expression is too large: its RE2 program may need %d instructions and Envoy accepts at most %d; use fewer or smaller repetitions and narrower character classes", size, ir.MaxRegexProgramSize)
	}
	return nil
}

// re2SizeBound parses the pattern both as UTF-8 (RE2's default, and Go's) and as Latin-1,
// byte by byte (what the Envoy 1.40 binary does: `.` matches one byte of "é" there, and
// `\x{100}` is an invalid escape), and returns the larger estimate: the check then holds
// whichever way an Envoy build reads patterns. The two differ only for a pattern with
// non-ASCII characters: "😀+" repeats the whole emoji in UTF-8 and its last byte in
// Latin-1, and "[a😀]|b" is one class in UTF-8 and an alternation in Latin-1.
func re2SizeBound(pattern string) (int, error) {
	prog, err := compileRegex(pattern)
	if err != nil {
		return 0, err
	}
	size := re2ProgramSize(prog)
	if l1 := latin1(pattern); l1 != pattern {
		if prog, err = compileRegex(l1); err != nil {
			return 0, fmt.Errorf("read byte by byte, as Envoy does: %v", err)
		}
		size = max(size, re2ProgramSize(prog))
	}
	return size, nil
}

// latin1 returns s with each byte as the rune of the same value.
func latin1(s string) string {
	runes := make([]rune, len(s))
	for i := 0; i < len(s); i++ {
		runes[i] = rune(s[i])
	}
	return string(runes)
}

// re2UnknownClasses are Unicode class names Go knows and Envoy's RE2 does not
// (TestRegexUnicodeClassesAgainstEnvoy tries every name Go knows).
var re2UnknownClasses = map[string]bool{"Cn": true, "LC": true}

// checkRE2Escapes refuses the escapes Go accepts and Envoy's RE2 does not. Envoy 1.40
// compiles patterns as Latin-1 (observed: `\x{100}` is an invalid escape there, and `.`
// matches one byte), so a character escape must stay below 256: `\x{...}` and octal
// alike. Escapes are found by scanning: a backslash always escapes the next character,
// except inside \Q...\E.
func checkRE2Escapes(p string) error {
	for i := 0; i+1 < len(p); i++ {
		if p[i] != '\\' {
			continue
		}
		rest := p[i+1:]
		switch {
		case rest[0] == 'Q':
			end := strings.Index(rest, `\E`)
			if end < 0 {
				return nil // the rest is literal
			}
			i += end + 2
			continue
		case strings.HasPrefix(rest, "x{"):
			hex, _, _ := strings.Cut(rest[2:], "}")
			if v, err := strconv.ParseUint(hex, 16, 32); err == nil && v > 0xff {
				return fmt.Errorf("`\\x{%s}`: Envoy accepts character escapes up to \\x{FF}", hex)
			}
		case rest[0] >= '0' && rest[0] <= '7':
			if oct := octalPrefix(rest); oct > 0377 {
				return fmt.Errorf("`\\%o`: Envoy accepts character escapes up to \\377", oct)
			}
		case rest[0] == 'p' || rest[0] == 'P':
			if name := classNameOf(rest[1:]); re2UnknownClasses[name] {
				return fmt.Errorf("`\\%c{%s}`: Envoy's RE2 does not know the Unicode class %s", rest[0], name, name)
			}
		}
		i++ // skip the escaped character
	}
	return nil
}

// octalPrefix is the value of the up to three octal digits at the start of s.
func octalPrefix(s string) int {
	v := 0
	for i := 0; i < 3 && i < len(s) && s[i] >= '0' && s[i] <= '7'; i++ {
		v = v*8 + int(s[i]-'0')
	}
	return v
}

// classNameOf is the name after \p or \P: one letter, or braced (a leading ^ negates).
func classNameOf(s string) string {
	if !strings.HasPrefix(s, "{") {
		if s == "" {
			return ""
		}
		return s[:1]
	}
	name, _, _ := strings.Cut(s[1:], "}")
	return strings.TrimPrefix(name, "^")
}

// compileRegex compiles a pattern as regexp.Compile does (Perl flags, the same as RE2's
// defaults in Envoy), keeping Go's program.
func compileRegex(pattern string) (*syntax.Prog, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	return syntax.Compile(re.Simplify())
}

// re2UnanchoredPrefix is what RE2 adds for unanchored search: a non-greedy loop over any
// byte (an Alt and a byte range) flattened into at most three instructions.
const re2UnanchoredPrefix = 3

// re2ProgramSize bounds the size of the flattened program RE2 compiles for the same
// expression. After flattening, RE2's program holds each byte-range, capture,
// empty-width, match and fail instruction once, plus one entry per epsilon edge (an Alt
// branch or a Nop) that leads into another list: so a rune instruction counts the byte
// ranges of its UTF-8 automaton, an Alt counts two and a Nop one.
func re2ProgramSize(p *syntax.Prog) int {
	size := re2UnanchoredPrefix
	for i := range p.Inst {
		in := &p.Inst[i]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			size += 2
		case syntax.InstRune, syntax.InstRune1:
			size += runeInstSize(in)
		case syntax.InstRuneAny:
			size += utf8ByteRanges(0, unicode.MaxRune)
		case syntax.InstRuneAnyNotNL:
			size += utf8ByteRanges(0, '\n'-1) + utf8ByteRanges('\n'+1, unicode.MaxRune)
		default: // Capture, EmptyWidth, Nop, Match, Fail
			size++
		}
	}
	return size
}

// runeInstSize counts the byte ranges RE2 needs for a character class or a literal,
// with every case variant of a case-folded literal as a class member of its own.
func runeInstSize(in *syntax.Inst) int {
	runes := in.Rune
	if len(runes) == 1 {
		r := runes[0]
		if syntax.Flags(in.Arg)&syntax.FoldCase == 0 {
			return utf8Len(r)
		}
		n := utf8Len(r)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			n += utf8Len(f)
		}
		return n
	}
	n := 0
	for i := 0; i+1 < len(runes); i += 2 {
		n += utf8ByteRanges(runes[i], runes[i+1])
	}
	return n
}

// utf8ByteRanges counts the byte-range instructions of RE2's UTF-8 automaton for the
// rune range lo-hi, splitting it as RE2's Compiler::AddRuneRangeUTF8 does but without
// the suffix sharing that makes RE2's count smaller: 80-10FFFF is RE2's hand-factored
// special case of six byte ranges; otherwise the range is split by encoded length and
// then until the ranges agree on their leading bytes, and each piece of n bytes costs n.
func utf8ByteRanges(lo, hi rune) int {
	if lo > hi {
		return 0
	}
	if lo == 0x80 && hi == unicode.MaxRune {
		return 6
	}
	for _, max := range []rune{0x7f, 0x7ff, 0xffff} {
		if lo <= max && max < hi {
			return utf8ByteRanges(lo, max) + utf8ByteRanges(max+1, hi)
		}
	}
	if hi < 0x80 {
		return 1
	}
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1 // the last i bytes of an encoding
		if lo&^m == hi&^m {
			continue
		}
		if lo&m != 0 {
			return utf8ByteRanges(lo, lo|m) + utf8ByteRanges((lo|m)+1, hi)
		}
		if hi&m != m {
			return utf8ByteRanges(lo, hi&^m-1) + utf8ByteRanges(hi&^m, hi)
		}
	}
	return utf8Len(lo)
}

// utf8Len is the encoded length of r, surrogates included (RE2 encodes them like any
// other code point; utf8.RuneLen refuses them).
func utf8Len(r rune) int {
	switch {
	case r < 0x80:
		return 1
	case r < 0x800:
		return 2
	case r < 0x10000:
		return 3
	}
	return 4
}
