// Package crdvalidate checks objects against CustomResourceDefinitions offline, the way
// kube-apiserver checks them on create: defaulting, the OpenAPI schema, list invariants,
// embedded metadata and the CEL rules (x-kubernetes-validations). It calls the
// apiextensions-apiserver packages the API server itself uses, so a refused object gets
// the same message `kubectl apply` would print, word for word.
package crdvalidate

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Validator holds the CRDs of some directories and, per kind actually validated, its
// compiled schema and CEL programs. Compiling is the expensive part (the Gateway API
// CRDs carry hundreds of CEL rules), so it happens once per kind and version, on first
// use: translating ten thousand Backends compiles the Backend CRD once and no other.
type Validator struct {
	crds map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition

	mu       sync.Mutex
	compiled map[schema.GroupVersionKind]*kindValidator
}

// New reads the CustomResourceDefinitions among the *.yaml files of dirs in fsys; other
// objects there (kustomizations, admission policies) are skipped. The files are parsed
// on every CPU (the Gateway API CRDs are a megabyte of YAML: a fortieth of `portcullis
// translate` on ten thousand objects when parsed one after the other) and taken in
// order, a later file's CRD of a kind replacing an earlier one's.
func New(fsys fs.FS, dirs ...string) (*Validator, error) {
	var names []string
	for _, dir := range dirs {
		found, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		names = append(names, found...)
	}
	crds, errs := make([]*apiextensionsv1.CustomResourceDefinition, len(names)), make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { crds[i], errs[i] = readCRD(fsys, name) })
	}
	wg.Wait()
	v := &Validator{
		crds:     map[schema.GroupKind]*apiextensionsv1.CustomResourceDefinition{},
		compiled: map[schema.GroupVersionKind]*kindValidator{},
	}
	for i, crd := range crds {
		if errs[i] != nil {
			return nil, errs[i]
		}
		if crd != nil {
			v.crds[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd
		}
	}
	return v, nil
}

// readCRD is the CRD of file name, or nil when the file holds another kind of object.
func readCRD(fsys fs.FS, name string) (*apiextensionsv1.CustomResourceDefinition, error) {
	raw, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(raw, crd); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if crd.Kind != "CustomResourceDefinition" {
		return nil, nil
	}
	return crd, nil
}

// Knows reports whether gk is the kind of one of the CRDs, that is whether Validate
// checks objects of it.
func (v *Validator) Knows(gk schema.GroupKind) bool {
	_, ok := v.crds[gk]
	return ok
}

// Validate checks obj, as DecodeJSON returns it, the way kube-apiserver checks a create of it
// and returns the API server's error (an Invalid or BadRequest *apierrors.StatusError)
// or nil. Objects of
// kinds no CRD defines are not checked. obj is not modified. Like kubectl, an object
// without a namespace is checked as if it were in the namespace "default".
func (v *Validator) Validate(obj *unstructured.Unstructured) error {
	return v.ValidateOwned(obj.DeepCopy())
}

// ValidateOwned is Validate on an object the caller gives up: it is left as the API
// server would store it (defaulted and pruned, or half so when refused). It spares the
// copy, which a caller that decodes an object only to validate it does not need.
func (v *Validator) ValidateOwned(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	if !v.Knows(gvk.GroupKind()) {
		return nil
	}
	kv, err := v.kind(gvk)
	if err != nil {
		return err
	}
	return kv.validate(context.Background(), obj)
}

// kind returns the compiled validator of gvk, compiling it on first use.
func (v *Validator) kind(gvk schema.GroupVersionKind) (*kindValidator, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if kv, ok := v.compiled[gvk]; ok {
		return kv, nil
	}
	crd := v.crds[gvk.GroupKind()]
	version := servedVersion(crd, gvk.Version)
	if version == nil {
		return nil, fmt.Errorf("no matches for kind %q in version %q: the %s CRD serves %s",
			gvk.Kind, gvk.GroupVersion(), crd.Name, strings.Join(servedVersions(crd), ", "))
	}
	kv, err := compile(crd, version, gvk)
	if err != nil {
		return nil, fmt.Errorf("CRD %s version %s: %w", crd.Name, version.Name, err)
	}
	v.compiled[gvk] = kv
	return kv, nil
}

func servedVersion(crd *apiextensionsv1.CustomResourceDefinition, name string) *apiextensionsv1.CustomResourceDefinitionVersion {
	for i, ver := range crd.Spec.Versions {
		if ver.Name == name && ver.Served {
			return &crd.Spec.Versions[i]
		}
	}
	return nil
}

func servedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var names []string
	for _, ver := range crd.Spec.Versions {
		if ver.Served {
			names = append(names, crd.Spec.Group+"/"+ver.Name)
		}
	}
	sort.Strings(names)
	return names
}

// DecodeJSON reads one object the way it reaches the API server from kubectl: as JSON
// (a loader's conversion of the YAML), whole numbers as int64 (the schema's integer
// fields and the CEL rules about them depend on it).
func DecodeJSON(js []byte) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	return obj, obj.UnmarshalJSON(js)
}

// IsRefusal reports whether err is the API server's refusal of an object (what Validate
// returns for invalid input), as opposed to a failure to validate at all.
func IsRefusal(err error) bool {
	return apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)
}
