package quickstart

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// fence is one fenced code block of the README.
type fence struct {
	lang  string
	lines []string
}

// quickstart holds what a newcomer types from the README's Quickstart section, and
// the output it promises.
type quickstart struct {
	setup            []string // the lines of the block with make run
	curl, curlOutput string
	kubectl          string
	kubectlOutput    []string
}

// readQuickstart parses the `## Quickstart` section of the README at path.
func readQuickstart(path string) (quickstart, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return quickstart{}, err
	}
	section, err := sectionLines(string(data), "## Quickstart")
	if err != nil {
		return quickstart{}, err
	}
	return parseQuickstart(fences(section))
}

// sectionLines returns the lines under heading up to the next level-2 heading.
func sectionLines(doc, heading string) ([]string, error) {
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != heading {
			continue
		}
		end := len(lines)
		for j := i + 1; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "## ") {
				end = j
				break
			}
		}
		return lines[i+1 : end], nil
	}
	return nil, fmt.Errorf("README has no %q section", heading)
}

// fences returns the fenced code blocks of lines, in order.
func fences(lines []string) []fence {
	var out []fence
	var cur *fence
	for _, l := range lines {
		marker, isFence := strings.CutPrefix(strings.TrimSpace(l), "```")
		switch {
		case isFence && cur == nil:
			cur = &fence{lang: strings.TrimSpace(marker)}
		case isFence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.lines = append(cur.lines, l)
		}
	}
	return out
}

// parseQuickstart finds the sh block with `make run`, the one-line sh blocks with the
// curl and kubectl commands, and the plain block after each: its expected output.
func parseQuickstart(blocks []fence) (quickstart, error) {
	var q quickstart
	for i, b := range blocks {
		if b.lang != "sh" {
			continue
		}
		switch first := firstWord(b.lines); {
		case first == "make":
			q.setup = b.lines
		case first == "curl" || first == "kubectl":
			if len(b.lines) != 1 {
				return q, fmt.Errorf("the %s block has %d lines, want the one command", first, len(b.lines))
			}
			if i+1 >= len(blocks) || blocks[i+1].lang != "" {
				return q, fmt.Errorf("the %s command is not followed by a plain block with its output", first)
			}
			if first == "curl" {
				q.curl, q.curlOutput = b.lines[0], strings.Join(blocks[i+1].lines, "\n")
			} else {
				q.kubectl, q.kubectlOutput = b.lines[0], blocks[i+1].lines
			}
		}
	}
	if q.setup == nil || q.curl == "" || q.kubectl == "" {
		return q, fmt.Errorf("the Quickstart needs a sh block with make run, and sh blocks with the curl and the kubectl command (found setup=%v curl=%q kubectl=%q)", q.setup != nil, q.curl, q.kubectl)
	}
	return q, nil
}

func firstWord(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	fields := strings.Fields(lines[0])
	if len(fields) == 0 {
		return ""
	}
	return fields[0]
}

// table splits kubectl's column output into rows of cells keyed by header. kubectl
// left-aligns every cell under its header, so a cell is the text between its header's
// start and the next header's: an empty cell (a condition a Backend does not have, no
// reason) stays empty instead of shifting the columns after it.
func table(lines []string) []map[string]string {
	var rows []map[string]string
	var header []string
	var starts []int
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if header == nil {
			header, starts = headerColumns(l)
			continue
		}
		row := map[string]string{}
		for i, h := range header {
			end := len(l)
			if i+1 < len(starts) {
				end = min(starts[i+1], len(l))
			}
			if starts[i] < end {
				row[h] = strings.TrimSpace(l[starts[i]:end])
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// headerColumns returns the header's names and where each starts.
func headerColumns(line string) (names []string, starts []int) {
	for i := 0; i < len(line); i++ {
		if line[i] != ' ' && (i == 0 || line[i-1] == ' ') {
			starts = append(starts, i)
		}
	}
	return strings.Fields(line), starts
}

func TestParseQuickstart(t *testing.T) {
	good := []fence{
		{lang: "sh", lines: []string{"make run   # one", "make test"}},
		{lang: "sh", lines: []string{"curl -s http://x/"}},
		{lines: []string{"hello"}},
		{lang: "sh", lines: []string{"kubectl get backends"}},
		{lines: []string{"NAME  ACCEPTED", "a     True"}},
	}
	tests := []struct {
		name    string
		blocks  []fence
		wantErr string
	}{
		{name: "the four blocks in order are found", blocks: good},
		{name: "a curl without its output block is refused", blocks: good[:2], wantErr: "not followed by a plain block"},
		{name: "a missing kubectl command is refused", blocks: good[:3], wantErr: "sh blocks with the curl and the kubectl command"},
		{name: "a two-line command block is refused", blocks: []fence{good[0], {lang: "sh", lines: []string{"curl a", "curl b"}}, good[2]}, wantErr: "has 2 lines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, err := parseQuickstart(tt.blocks)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if q.curl != "curl -s http://x/" || q.curlOutput != "hello" || q.kubectl != "kubectl get backends" || table(q.kubectlOutput)[0]["ACCEPTED"] != "True" {
				t.Fatalf("parsed %+v", q)
			}
		})
	}
}

func TestTableKeepsEmptyCellsInTheirColumn(t *testing.T) {
	rows := table([]string{
		"NAME   ADDRESSES   PROGRAMMED   REASON                  AGE",
		"ip                 False        InvalidCertificateRef   5s",
		"fqdn   True        True                                 12m",
	})
	want := []map[string]string{
		{"NAME": "ip", "ADDRESSES": "", "PROGRAMMED": "False", "REASON": "InvalidCertificateRef", "AGE": "5s"},
		{"NAME": "fqdn", "ADDRESSES": "True", "PROGRAMMED": "True", "REASON": "", "AGE": "12m"},
	}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("table = %v\nwant    %v", rows, want)
	}
}

func TestFencesAndSections(t *testing.T) {
	doc := "# T\n## Quickstart\ntext\n```sh\nmake run\n```\n```\nout\n```\n## Next\n```sh\nnot this\n```\n"
	lines, err := sectionLines(doc, "## Quickstart")
	if err != nil {
		t.Fatal(err)
	}
	got := fences(lines)
	if len(got) != 2 || got[0].lang != "sh" || got[0].lines[0] != "make run" || got[1].lang != "" || got[1].lines[0] != "out" {
		t.Fatalf("fences = %+v, want the two blocks of the section only", got)
	}
	if _, err := sectionLines(doc, "## Missing"); err == nil {
		t.Fatal("a missing section is not an error")
	}
}
