package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Load appends every object of a multi-document YAML (or JSON) stream to r. Objects of
// kinds translation does not read are an error, as is a field the kind does not have,
// so a typo in a file given to `portcullis translate` is reported rather than ignored.
func (r *Resources) Load(in io.Reader) error {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
		if err := r.add(doc); err != nil {
			return fmt.Errorf("document %d: %w", n, err)
		}
	}
}

func (r *Resources) add(doc []byte) error {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return err
	}
	switch tm.GroupVersionKind().GroupKind().String() {
	case "GatewayClass.gateway.networking.k8s.io":
		return appendStrict(doc, &r.GatewayClasses)
	case "Gateway.gateway.networking.k8s.io":
		return appendStrict(doc, &r.Gateways)
	case "HTTPRoute.gateway.networking.k8s.io":
		return appendStrict(doc, &r.HTTPRoutes)
	case "ReferenceGrant.gateway.networking.k8s.io":
		return appendStrict(doc, &r.ReferenceGrants)
	case "BackendTLSPolicy.gateway.networking.k8s.io":
		return appendStrict(doc, &r.BackendTLSPolicies)
	case "Backend.egress.portcullis.io":
		return appendStrict(doc, &r.Backends)
	case "Service":
		return appendStrict(doc, &r.Services)
	case "EndpointSlice.discovery.k8s.io":
		return appendStrict(doc, &r.EndpointSlices)
	case "Secret":
		return appendStrict(doc, &r.Secrets)
	case "ConfigMap":
		return appendStrict(doc, &r.ConfigMaps)
	case "Pod":
		return appendStrict(doc, &r.Pods)
	case "Namespace":
		return appendStrict(doc, &r.Namespaces)
	case "List":
		return r.addList(doc)
	case "":
		if isEmptyDocument(doc) {
			return nil
		}
	}
	return fmt.Errorf("kind %q (apiVersion %q) is not an input of translation", tm.Kind, tm.APIVersion)
}

func (r *Resources) addList(doc []byte) error {
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
		if err := r.add(b); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}

func appendStrict[T any](doc []byte, into *[]T) error {
	var obj T
	if err := yaml.UnmarshalStrict(doc, &obj); err != nil {
		return err
	}
	*into = append(*into, obj)
	return nil
}

// Kinds lists the kinds Load accepts, for error messages and docs.
var Kinds = []string{"GatewayClass", "Gateway", "HTTPRoute", "ReferenceGrant", "BackendTLSPolicy", "Backend", "Service", "EndpointSlice", "Secret", "ConfigMap", "Namespace", "Pod"}

// isEmptyDocument reports whether a YAML document holds nothing but comments and blanks.
func isEmptyDocument(doc []byte) bool {
	var v any
	return yaml.Unmarshal(doc, &v) == nil && v == nil
}
