package xdstest

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

// Stat returns the value of one counter or gauge from the admin interface's /stats.
func (e *Envoy) Stat(name string) (uint64, error) {
	code, body, err := e.get("/stats?filter=" + url.QueryEscape("^"+regexp.QuoteMeta(name)+"$"))
	if err != nil {
		return 0, err
	}
	if code != http.StatusOK {
		return 0, fmt.Errorf("/stats answered %d %q", code, body)
	}
	for line := range strings.Lines(string(body)) {
		stat, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if ok && stat == name {
			return strconv.ParseUint(value, 10, 64)
		}
	}
	return 0, fmt.Errorf("no stat %q", name)
}
