package egress

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Load appends every object of a multi-document YAML (or JSON) stream to r. Objects of
// kinds translation does not read are an error, as is a field the kind does not have,
// so a typo in a file given to `portcullis translate` is reported rather than ignored.
func (r *Resources) Load(in io.Reader) error {
	return r.LoadFiltered(in, nil)
}

// Keep decides, before an object is decoded, whether Load adds it: it sees the object's
// own document (each item of a List separately), the same as JSON, and its type.
type Keep func(doc, js []byte, tm metav1.TypeMeta) bool

// LoadFiltered is Load with keep (when not nil) deciding object by object, so a caller
// can leave out, and report its own way, what a cluster would refuse. The documents are
// converted to JSON on every CPU before they are added in order: parsing YAML is most
// of loading ten thousand objects.
func (r *Resources) LoadFiltered(in io.Reader, keep Keep) error {
	docs, readErr := readDocuments(in)
	converted := convertAll(docs)
	l := loader{res: r, keep: keep}
	for i, doc := range docs {
		if err := l.addConverted(doc, converted[i]); err != nil {
			return fmt.Errorf("document %d: %w", i+1, err)
		}
	}
	if readErr != nil {
		return fmt.Errorf("document %d: %w", len(docs)+1, readErr)
	}
	return nil
}

// readDocuments splits a multi-document stream, up to the first error.
func readDocuments(in io.Reader) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		docs = append(docs, doc)
	}
}

// conversion is a document as JSON and its type, or why it is not YAML (err) or not
// an object (tmErr).
type conversion struct {
	js    []byte
	err   error
	tm    metav1.TypeMeta
	tmErr error
}

// convert converts one document, on whichever CPU: the plainest documents without the
// YAML library (yaml_plain.go), the others with it.
func convert(doc []byte) conversion {
	var c conversion
	var plain bool
	if c.js, plain = plainYAMLToJSON(doc); !plain {
		c.js, c.err = yaml.YAMLToJSON(doc)
	}
	if c.err == nil {
		c.tmErr = json.Unmarshal(c.js, &c.tm)
	}
	return c
}

// convertAll converts every document to JSON and reads its type, on every CPU.
func convertAll(docs [][]byte) []conversion {
	out := make([]conversion, len(docs))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(docs); i = int(next.Add(1) - 1) {
				out[i] = convert(docs[i])
			}
		})
	}
	wg.Wait()
	return out
}

// loader is one Load: where objects go and which are kept.
type loader struct {
	res  *Resources
	keep Keep
}

func (l loader) add(doc []byte) error {
	return l.addConverted(doc, convert(doc))
}

// addConverted adds one document, given with its conversion to JSON; its errors are
// worded as sigs.k8s.io/yaml's Unmarshal words them.
func (l loader) addConverted(doc []byte, c conversion) error {
	if c.err != nil {
		return fmt.Errorf("error converting YAML to JSON: %w", c.err)
	}
	if c.tmErr != nil {
		return fmt.Errorf("error unmarshaling JSON: %w", c.tmErr)
	}
	tm := c.tm
	switch {
	case tm.GroupVersionKind().GroupKind().String() == "List":
		return l.addList(doc)
	case tm.Kind == "" && isEmptyDocument(doc):
		return nil
	case l.keep != nil && !l.keep(doc, c.js, tm):
		return nil
	}
	return l.res.addObject(doc, tm, yamlStrict)
}

// AddJSON adds one object given as JSON (as kubectl sends it to the API server), with
// the same strictness as Load, without Load's YAML parsing: `portcullis translate` has
// each object of a CRD kind as JSON already, from validating it.
func (r *Resources) AddJSON(js []byte) error {
	var tm metav1.TypeMeta
	if err := json.Unmarshal(js, &tm); err != nil {
		return err
	}
	return r.addObject(js, tm, jsonStrict)
}

// strictDecoder decodes a document into a typed object, refusing unknown fields.
type strictDecoder func(doc []byte, into any) error

func yamlStrict(doc []byte, into any) error { return yaml.UnmarshalStrict(doc, into) }

func jsonStrict(doc []byte, into any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

func (r *Resources) addObject(doc []byte, tm metav1.TypeMeta, decode strictDecoder) error {
	switch tm.GroupVersionKind().GroupKind().String() {
	case "GatewayClass.gateway.networking.k8s.io":
		return appendStrict(doc, &r.GatewayClasses, decode)
	case "Gateway.gateway.networking.k8s.io":
		return appendStrict(doc, &r.Gateways, decode)
	case "HTTPRoute.gateway.networking.k8s.io":
		return appendStrict(doc, &r.HTTPRoutes, decode)
	case "TLSRoute.gateway.networking.k8s.io":
		return appendStrict(doc, &r.TLSRoutes, decode)
	case "TCPRoute.gateway.networking.k8s.io":
		return appendStrict(doc, &r.TCPRoutes, decode)
	case "ReferenceGrant.gateway.networking.k8s.io":
		return appendStrict(doc, &r.ReferenceGrants, decode)
	case "BackendTLSPolicy.gateway.networking.k8s.io":
		return appendStrict(doc, &r.BackendTLSPolicies, decode)
	case "Backend.egress.portcullis.io":
		return appendStrict(doc, &r.Backends, decode)
	case "XBackend.gateway.networking.x-k8s.io":
		return appendStrict(doc, &r.XBackends, decode)
	case "Service":
		return appendStrict(doc, &r.Services, decode)
	case "EndpointSlice.discovery.k8s.io":
		return appendStrict(doc, &r.EndpointSlices, decode)
	case "Secret":
		return appendStrict(doc, &r.Secrets, decode)
	case "ConfigMap":
		return appendStrict(doc, &r.ConfigMaps, decode)
	case "Pod":
		return appendStrict(doc, &r.Pods, decode)
	case "Namespace":
		return appendStrict(doc, &r.Namespaces, decode)
	}
	return fmt.Errorf("kind %q (apiVersion %q) is not an input of translation", tm.Kind, tm.APIVersion)
}

func (l loader) addList(doc []byte) error {
	var list struct {
		Items []map[string]any `json:"items"`
	}
	if err := yaml.Unmarshal(doc, &list); err != nil {
		return err
	}
	for i, item := range list.Items {
		b, err := yaml.Marshal(item)
		if err != nil {
			return err
		}
		if err := l.add(b); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

func appendStrict[T any](doc []byte, into *[]T, decode strictDecoder) error {
	var obj T
	if err := decode(doc, &obj); err != nil {
		return err
	}
	*into = append(*into, obj)
	return nil
}

// Kinds lists the kinds Load accepts, for error messages and docs.
var Kinds = []string{"GatewayClass", "Gateway", "HTTPRoute", "TLSRoute", "TCPRoute", "ReferenceGrant", "BackendTLSPolicy", "Backend", "XBackend", "Service", "EndpointSlice", "Secret", "ConfigMap", "Namespace", "Pod"}

// isEmptyDocument reports whether a YAML document holds nothing but comments and blanks.
func isEmptyDocument(doc []byte) bool {
	var v any
	return yaml.Unmarshal(doc, &v) == nil && v == nil
}
