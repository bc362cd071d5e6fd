package localenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// FieldOwner is the server-side apply field manager of everything local applies.
const FieldOwner = "portcullis-local"

// DecodeYAML splits multi-document YAML into objects, skipping empty documents. A
// document without apiVersion or kind is an error naming its position.
func DecodeYAML(data []byte) ([]*unstructured.Unstructured, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for i := 1; ; i++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || bytes.Equal(t, []byte("null")) || bytes.Equal(t, []byte("{}")) {
			continue
		}
		// Unstructured's own JSON decoding keeps integers as int64, as the API machinery expects.
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("document %d: not an object: %w", i, err)
		}
		u := &unstructured.Unstructured{}
		if m["apiVersion"] == nil || m["kind"] == nil {
			return nil, fmt.Errorf("document %d: apiVersion and kind are required", i)
		}
		if err := u.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("document %d: apiVersion and kind are required", i)
		}
		objs = append(objs, u)
	}
}

// DecodeDir decodes every *.yaml file of dir in fsys, in name order, except kustomize's
// kustomization.yaml (not an object).
func DecodeDir(fsys fs.FS, dir string) ([]*unstructured.Unstructured, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	var objs []*unstructured.Unstructured
	for _, name := range names {
		if path.Base(name) == "kustomization.yaml" {
			continue
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		decoded, err := DecodeYAML(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		objs = append(objs, decoded...)
	}
	return objs, nil
}

// Apply server-side applies each object in order, taking over conflicting fields: the
// objects local installs are its own, and a restart must put them back as built.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", o.GetKind(), objectName(o), err)
		}
	}
	return nil
}

func objectName(o client.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}
