// Command crd-descriptions rewrites the descriptions of generated CRDs so that each
// paragraph is one line. controller-gen keeps the line breaks of the Go doc comments,
// and `kubectl explain` prints them where they are, breaking sentences in the middle;
// one line per paragraph lets kubectl wrap the text to the terminal. Paragraphs (blank
// lines), list items ("- ", "* ", "1. ") and indented lines keep their own lines.
//
// Usage: go run ./hack/crd-descriptions FILE...
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := rewrite(path); err != nil {
			fmt.Fprintf(os.Stderr, "crd-descriptions: %v\n", err)
			os.Exit(1)
		}
	}
}

func rewrite(path string) error {
	in, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out := joinDescriptions(string(in))
	if out == string(in) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// blockStart is a description whose value is a literal block.
var blockStart = regexp.MustCompile(`^( *)description: \|[-+]?$`)

// joinDescriptions joins the lines of every paragraph of every block description.
func joinDescriptions(doc string) string {
	lines := strings.Split(doc, "\n")
	var out []string
	for i := 0; i < len(lines); i++ {
		out = append(out, lines[i])
		m := blockStart.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent := len(m[1]) + 2
		end := i + 1
		for end < len(lines) && (strings.TrimSpace(lines[end]) == "" || leadingSpaces(lines[end]) >= indent) {
			end++
		}
		for end > i+1 && strings.TrimSpace(lines[end-1]) == "" { // trailing blank lines belong to what follows
			end--
		}
		out = append(out, joinParagraphs(lines[i+1:end], indent)...)
		i = end - 1
	}
	return strings.Join(out, "\n")
}

// listItem starts a line of its own.
var listItem = regexp.MustCompile(`^([-*] |\d+\. )`)

// joinParagraphs joins the block's lines (indented by indent) into one line per
// paragraph, list item (whose continuation lines are indented deeper) or other more
// deeply indented line.
func joinParagraphs(block []string, indent int) []string {
	var out []string
	joinable, inItem := false, false // whether the last output line may be continued; is a list item
	for _, l := range block {
		text := strings.TrimSpace(l)
		deeper := leadingSpaces(l) > indent
		switch {
		case text == "":
			out = append(out, "")
			joinable, inItem = false, false
		case deeper && inItem && !listItem.MatchString(text):
			out[len(out)-1] += " " + text
		case deeper:
			out = append(out, l)
			joinable, inItem = false, false
		case joinable && !inItem && !listItem.MatchString(text):
			out[len(out)-1] += " " + text
		default:
			out = append(out, strings.Repeat(" ", indent)+text)
			joinable, inItem = true, listItem.MatchString(text)
		}
	}
	return out
}

func leadingSpaces(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }
