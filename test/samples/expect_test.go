package samples

import (
	"bytes"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/jsonpath"
)

// kindInfo is what an expect line needs to know about a kind it names.
type kindInfo struct {
	gvk        schema.GroupVersionKind
	namespaced bool
	// selector is the keyword that picks one entry of a per-parent status list
	// ("parent" for routes, "ancestor" for policies); statusList and refField locate it.
	selector, statusList, refField string
}

// kinds are the kinds an expect line may name.
var kinds = map[string]kindInfo{
	"GatewayClass":     {gvk: gwapi("GatewayClass")},
	"Gateway":          {gvk: gwapi("Gateway"), namespaced: true},
	"HTTPRoute":        {gvk: gwapi("HTTPRoute"), namespaced: true, selector: "parent", statusList: "parents", refField: "parentRef"},
	"TLSRoute":         {gvk: gwapi("TLSRoute"), namespaced: true, selector: "parent", statusList: "parents", refField: "parentRef"},
	"TCPRoute":         {gvk: gwapi("TCPRoute"), namespaced: true, selector: "parent", statusList: "parents", refField: "parentRef"},
	"BackendTLSPolicy": {gvk: gwapi("BackendTLSPolicy"), namespaced: true, selector: "ancestor", statusList: "ancestors", refField: "ancestorRef"},
	"Backend":          {gvk: schema.GroupVersionKind{Group: "egress.portcullis.io", Version: "v1alpha1", Kind: "Backend"}, namespaced: true},
	"NetworkPolicy":    {gvk: schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}, namespaced: true},
	"Namespace":        {gvk: schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}},
	"Service":          {gvk: schema.GroupVersionKind{Version: "v1", Kind: "Service"}, namespaced: true},
	"ConfigMap":        {gvk: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, namespaced: true},
	"Secret":           {gvk: schema.GroupVersionKind{Version: "v1", Kind: "Secret"}, namespaced: true},
}

func gwapi(kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: kind}
}

// expectation is one "# expect:" line:
//
//	expect: <Kind> [<namespace>/]<name> [parent|ancestor <namespace>/<name>] <check>...
//
// where a check is "exists", "<ConditionType>=<True|False|Unknown>[/<Reason>]" (on the
// object, or on the status entry of the named parent or ancestor), or
// "{<jsonpath>}=<value>" on the object (an empty value means absent or empty; a value
// with spaces is written as a double-quoted Go string).
type expectation struct {
	line            string
	kind            kindInfo
	namespace, name string
	parent          *objectRef
	checks          []check
}

type objectRef struct{ namespace, name string }

func (r objectRef) String() string { return r.namespace + "/" + r.name }

// check is one assertion; exactly one of its forms is set.
type check struct {
	exists                bool
	condType, status      string
	reason                string // optional
	jsonPath, jsonPathVal string
}

var (
	conditionCheck = regexp.MustCompile(`^([A-Z][A-Za-z]+)=(True|False|Unknown)(?:/([A-Z][A-Za-z]+))?$`)
	dnsName        = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// parseExpectation parses the text after "expect:".
func parseExpectation(text string) (expectation, error) {
	e := expectation{line: text}
	f, err := fields(text)
	if err != nil {
		return e, fmt.Errorf("expect %q: %w", text, err)
	}
	if len(f) < 3 {
		return e, fmt.Errorf("expect %q: want <Kind> <namespace>/<name> <check>...", text)
	}
	k, ok := kinds[f[0]]
	if !ok {
		return e, fmt.Errorf("expect %q: unknown kind %s (known: %s)", text, f[0], knownKinds())
	}
	e.kind = k
	if e.namespace, e.name, err = parseTarget(f[1], k.namespaced); err != nil {
		return e, fmt.Errorf("expect %q: %w", text, err)
	}
	rest := f[2:]
	if rest[0] == "parent" || rest[0] == "ancestor" {
		if rest[0] != k.selector {
			return e, fmt.Errorf("expect %q: %s has no %q status entries", text, f[0], rest[0])
		}
		if len(rest) < 3 {
			return e, fmt.Errorf("expect %q: want %s <namespace>/<name> followed by checks", text, rest[0])
		}
		ns, name, err := parseTarget(rest[1], true)
		if err != nil {
			return e, fmt.Errorf("expect %q: %s: %w", text, rest[0], err)
		}
		e.parent, rest = &objectRef{ns, name}, rest[2:]
	}
	for _, tok := range rest {
		c, err := parseCheck(tok, e.parent != nil)
		if err != nil {
			return e, fmt.Errorf("expect %q: %w", text, err)
		}
		e.checks = append(e.checks, c)
	}
	return e, nil
}

// fields splits an expect line at spaces, except inside double quotes, so a JSONPath
// check can compare with a value that has spaces: {.path}="a b".
func fields(text string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote, escaped := false, false
	for _, r := range text {
		switch {
		case escaped:
			escaped = false
		case inQuote && r == '\\':
			escaped = true
		case r == '"':
			inQuote = !inQuote
		case r == ' ' && !inQuote:
			if cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
			}
			continue
		}
		cur.WriteRune(r)
	}
	if inQuote {
		return nil, fmt.Errorf("unbalanced double quote")
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, nil
}

func parseTarget(s string, namespaced bool) (ns, name string, err error) {
	parts := strings.Split(s, "/")
	switch {
	case namespaced && (len(parts) != 2 || !dnsName.MatchString(parts[0]) || !dnsName.MatchString(parts[1])):
		return "", "", fmt.Errorf("%q: want <namespace>/<name>", s)
	case !namespaced && (len(parts) != 1 || !dnsName.MatchString(s)):
		return "", "", fmt.Errorf("%q: a cluster-scoped object is named without a namespace", s)
	case namespaced:
		return parts[0], parts[1], nil
	}
	return "", s, nil
}

func parseCheck(tok string, onParent bool) (check, error) {
	switch {
	case tok == "exists":
		return check{exists: true}, nil
	case strings.HasPrefix(tok, "{"):
		path, val, ok := strings.Cut(tok, "}=")
		if !ok {
			return check{}, fmt.Errorf("%q: want {<jsonpath>}=<value>", tok)
		}
		if err := jsonpath.New("check").Parse(path + "}"); err != nil {
			return check{}, fmt.Errorf("%q: %v", tok, err)
		}
		if onParent {
			return check{}, fmt.Errorf("%q: JSONPath checks apply to the whole object; put them on a line without parent/ancestor", tok)
		}
		if strings.HasPrefix(val, `"`) {
			unquoted, err := strconv.Unquote(val)
			if err != nil {
				return check{}, fmt.Errorf("%q: the value is not a valid double-quoted string", tok)
			}
			val = unquoted
		}
		return check{jsonPath: path + "}", jsonPathVal: val}, nil
	}
	m := conditionCheck.FindStringSubmatch(tok)
	if m == nil {
		return check{}, fmt.Errorf("%q: want exists, <Type>=<True|False|Unknown>[/<Reason>] or {<jsonpath>}=<value>", tok)
	}
	return check{condType: m[1], status: m[2], reason: m[3]}, nil
}

func knownKinds() string {
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// verify returns nil when the object meets every check, else what differs.
func (e expectation) verify(obj *unstructured.Unstructured) error {
	for _, c := range e.checks {
		if err := c.verify(obj, e.parent); err != nil {
			return err
		}
	}
	return nil
}

func (c check) verify(obj *unstructured.Unstructured, parent *objectRef) error {
	switch {
	case c.exists:
		return nil
	case c.jsonPath != "":
		return verifyJSONPath(obj, c.jsonPath, c.jsonPathVal)
	}
	conds, err := conditionsOf(obj, parent)
	if err != nil {
		return err
	}
	return verifyCondition(conds, obj.GetGeneration(), c)
}

func verifyJSONPath(obj *unstructured.Unstructured, path, want string) error {
	jp := jsonpath.New("check").AllowMissingKeys(true)
	if err := jp.Parse(path); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := jp.Execute(&buf, obj.Object); err != nil {
		return fmt.Errorf("%s: %v", path, err)
	}
	if got := buf.String(); got != want {
		return fmt.Errorf("%s is %q, want %q", path, got, want)
	}
	return nil
}

// conditionsOf returns the object's status.conditions, or those of the status entry for
// the given parent (routes) or ancestor (policies).
func conditionsOf(obj *unstructured.Unstructured, parent *objectRef) ([]any, error) {
	if parent == nil {
		conds, _, err := unstructured.NestedSlice(obj.Object, "status", "conditions")
		return conds, err
	}
	k := kinds[obj.GetKind()]
	entries, _, err := unstructured.NestedSlice(obj.Object, "status", k.statusList)
	if err != nil {
		return nil, err
	}
	for _, raw := range entries {
		entry, _ := raw.(map[string]any)
		ns, _, _ := unstructured.NestedString(entry, k.refField, "namespace")
		name, _, _ := unstructured.NestedString(entry, k.refField, "name")
		if ns == "" {
			ns = obj.GetNamespace()
		}
		if ns == parent.namespace && name == parent.name {
			conds, _, err := unstructured.NestedSlice(entry, "conditions")
			return conds, err
		}
	}
	return nil, fmt.Errorf("no status.%s entry for %s yet", k.statusList, parent)
}

// verifyCondition checks one condition, which must also describe the object's current
// generation: a condition left from an older spec proves nothing.
func verifyCondition(conds []any, generation int64, c check) error {
	for _, raw := range conds {
		cond, _ := raw.(map[string]any)
		if cond["type"] != c.condType {
			continue
		}
		status, _ := cond["status"].(string)
		reason, _ := cond["reason"].(string)
		msg, _ := cond["message"].(string)
		observed, _, _ := unstructured.NestedInt64(cond, "observedGeneration")
		switch {
		case status != c.status || (c.reason != "" && reason != c.reason):
			return fmt.Errorf("%s is %s/%s (%s), want %s", c.condType, status, reason, msg, c.want())
		case observed != 0 && observed != generation:
			return fmt.Errorf("%s is for generation %d, the object is at %d", c.condType, observed, generation)
		}
		return nil
	}
	return fmt.Errorf("no %s condition yet", c.condType)
}

func (c check) want() string {
	if c.reason == "" {
		return c.status
	}
	return c.status + "/" + c.reason
}
