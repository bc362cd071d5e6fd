package crdvalidate

import (
	"crypto/sha256"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"k8s.io/kube-openapi/pkg/validation/strfmt"
	"k8s.io/kube-openapi/pkg/validation/validate"
)

// schemaWalk validates objects against a CRD's OpenAPI schema with kube-openapi's
// validators, as apiextensions-apiserver does on a create, and remembers which values
// each schema node found valid: validity of a value against a schema depends on nothing
// else, and objects repeat their parts (the same parent Gateway, the same port list).
//
// kube-openapi's object validator visits every property of the schema at every object
// it validates, and makes a validator for each present one; walking ten thousand
// HTTPRoutes that way was a sixth of `portcullis translate`. Here each node is checked
// by kube-openapi against a shallow copy of its schema (its properties and items taken
// out: its type, required fields, sizes, enum, format and pattern are checked exactly
// as before), and the walk goes on into the properties and items the value has. The
// errors are kube-openapi's, with its paths. A node whose schema has anything that
// reads below it otherwise (allOf, anyOf, oneOf, not, dependencies, pattern
// properties, tuple items, additionalProperties: false) is validated whole by
// kube-openapi, as is everything under it.
type schemaWalk struct {
	root *schemaNode

	mu    sync.RWMutex
	valid map[[sha256.Size]byte]bool // spine node and value found valid
}

// maxSchemaMemoEntries bounds the memo (32 bytes per entry).
const maxSchemaMemoEntries = 1 << 20

// schemaNode is one schema node, prepared for the walk.
type schemaNode struct {
	full       *spec.Schema // the node's schema as it is
	shallow    *spec.Schema // without properties and items; nil: validate with full
	spine      string       // the path with indexes dropped, on properties and items only
	remember   bool         // the node is on that spine (not under a map's keys or an odd name)
	properties map[string]*schemaNode
	items      *schemaNode
	additional *schemaNode
	rate       memoRate
	validators validatorsByPath
}

func newSchemaWalk(root *spec.Schema) *schemaWalk {
	return &schemaWalk{root: newSchemaNode(root, "", false), valid: map[[sha256.Size]byte]bool{}}
}

// newSchemaNode prepares s, at spine; its value is remembered if remember. Below a
// property whose name holds '.', '[' or ']' spines could be ambiguous, and below a map
// they are not paths of one node: nothing there is remembered.
func newSchemaNode(s *spec.Schema, spine string, remember bool) *schemaNode {
	n := &schemaNode{full: s, spine: spine, remember: remember}
	if !shallowable(s) {
		return n
	}
	shallow := *s
	shallow.Properties, shallow.Items, shallow.AdditionalProperties = nil, nil, nil
	n.shallow = &shallow
	onSpine := remember || spine == ""
	for name := range s.Properties {
		p := s.Properties[name]
		n.properties = ensure(n.properties)
		n.properties[name] = newSchemaNode(&p, spine+"."+name, onSpine && !strings.ContainsAny(name, ".[]"))
	}
	if s.Items != nil && s.Items.Schema != nil {
		n.items = newSchemaNode(s.Items.Schema, spine+"[]", onSpine)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n.additional = newSchemaNode(s.AdditionalProperties.Schema, spine+"{}", false)
	}
	return n
}

// shallowable says whether s's own checks read nothing below it but what the walk
// visits (kube-openapi's object and slice validators, which the shallow copy leaves
// without properties and items).
func shallowable(s *spec.Schema) bool {
	return len(s.AllOf) == 0 && len(s.AnyOf) == 0 && len(s.OneOf) == 0 && s.Not == nil &&
		len(s.Dependencies) == 0 && len(s.PatternProperties) == 0 && s.AdditionalItems == nil &&
		(s.Items == nil || len(s.Items.Schemas) == 0) &&
		(s.AdditionalProperties == nil || s.AdditionalProperties.Allows)
}

func ensure(m map[string]*schemaNode) map[string]*schemaNode {
	if m == nil {
		return map[string]*schemaNode{}
	}
	return m
}

// Validate is apiextensions-apiserver's schema validator's Validate for a create.
func (w *schemaWalk) Validate(obj any, _ ...apiservervalidation.ValidationOption) *validate.Result {
	res := &validate.Result{}
	w.node(w.root, "", obj, res)
	return res
}

// node validates data at path against n, adding what it finds to res.
func (w *schemaWalk) node(n *schemaNode, path string, data any, res *validate.Result) {
	if n.shallow == nil {
		res.Merge(n.validators.at(n.full, path).Validate(data))
		return
	}
	var key [sha256.Size]byte
	remembered := false
	if n.remember && n.rate.worthIt() {
		b, exact := appendValueKey([]byte(n.spine+"\x00"), data)
		if key, remembered = sha256.Sum256(b), exact; exact && n.rate.hit(w.isValid(key)) {
			return
		}
	}
	own := n.validators.at(n.shallow, path).Validate(data)
	below := &validate.Result{}
	w.children(n, path, data, below)
	if remembered && own.IsValid() && below.IsValid() && len(own.Warnings)+len(below.Warnings) == 0 {
		w.remember(key)
	}
	res.Merge(own, below)
}

// children walks the properties or items data has, as kube-openapi's object and slice
// validators do (in key order rather than map order).
func (w *schemaWalk) children(n *schemaNode, path string, data any, res *validate.Result) {
	switch data := data.(type) {
	case map[string]any:
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if child := n.properties[k]; child != nil {
				w.node(child, fieldPath(path, k), data[k], res)
			} else if n.additional != nil {
				w.node(n.additional, path+"."+k, data[k], res)
			}
		}
	case []any:
		if n.items != nil {
			for i, v := range data {
				w.node(n.items, path+"["+strconv.Itoa(i)+"]", v, res)
			}
		}
	}
}

// fieldPath is kube-openapi's path of a property (of a map's key, it is always
// path + "." + key).
func fieldPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func (w *schemaWalk) isValid(key [sha256.Size]byte) bool {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.valid[key]
}

func (w *schemaWalk) remember(key [sha256.Size]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.valid) < maxSchemaMemoEntries {
		w.valid[key] = true
	}
}

// validatorsByPath keeps a node's kube-openapi validators by the path they report:
// making one makes its eight checkers, which was half of the walk's time when each
// object's each node made its own, and what a validator checks depends only on its
// schema and its path (its Validate reads them and keeps nothing). Paths hold list
// indexes and map keys, so a node keeps at most maxValidatorsPerNode and makes the rest
// afresh.
type validatorsByPath struct {
	byPath sync.Map // path → *validate.SchemaValidator
	kept   atomic.Int64
}

// maxValidatorsPerNode bounds a node's validators (paths differ by list index or, under a
// map, by key).
const maxValidatorsPerNode = 64

// at is the validator of s at path; s is always the same schema for one node.
func (v *validatorsByPath) at(s *spec.Schema, path string) *validate.SchemaValidator {
	if kept, ok := v.byPath.Load(path); ok {
		return kept.(*validate.SchemaValidator)
	}
	made := validate.NewSchemaValidator(s, nil, path, strfmt.Default)
	if v.kept.Add(1) <= maxValidatorsPerNode {
		v.byPath.Store(path, made)
	}
	return made
}
