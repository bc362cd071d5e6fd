package ir

// MaxRegexProgramSize is the largest RE2 program a regular expression in the IR may
// compile to. The Envoy bootstrap sets it as runtime key re2.max_program_size.error_level
// (Envoy refuses larger programs, and a refused route table holds back the whole
// Gateway), and the translator refuses larger expressions on the route that asks, so the
// two are one constant.
const MaxRegexProgramSize = 1000
