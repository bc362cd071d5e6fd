package crdvalidate

import (
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
)

// trimTo is s cut down to the branches that lead to a node where at holds, each such
// node kept whole; nil when no node does.
//
// Some of the API server's walks over an object act only at nodes of one kind and
// otherwise just descend: embedded resources' metadata (objectmeta's Coerce and
// Validate, at x-kubernetes-embedded-resource) and list invariants (listtype, at
// x-kubernetes-list-type set or map). Such a walk reads only a node's properties,
// items and additional properties on the way down, so on the trimmed schema it gives
// the same answer and skips the rest of the object; on nil it returns at once. (A
// structural schema never has both properties and additionalProperties, so a key
// whose property was trimmed away is never taken for an additional one.) The
// Gateway API and Portcullis CRDs have no embedded resources, and their list maps sit
// in a few branches: the two walks were an eighth of validating ten thousand routes.
func trimTo(s *structuralschema.Structural, at func(*structuralschema.Structural) bool) *structuralschema.Structural {
	if s == nil {
		return nil
	}
	if at(s) {
		return s
	}
	var trimmed structuralschema.Structural
	for name := range s.Properties {
		p := s.Properties[name]
		if t := trimTo(&p, at); t != nil {
			if trimmed.Properties == nil {
				trimmed.Properties = map[string]structuralschema.Structural{}
			}
			trimmed.Properties[name] = *t
		}
	}
	trimmed.Items = trimTo(s.Items, at)
	if s.AdditionalProperties != nil {
		if t := trimTo(s.AdditionalProperties.Structural, at); t != nil {
			trimmed.AdditionalProperties = &structuralschema.StructuralOrBool{Structural: t, Bool: s.AdditionalProperties.Bool}
		}
	}
	if trimmed.Properties == nil && trimmed.Items == nil && trimmed.AdditionalProperties == nil {
		return nil
	}
	return &trimmed
}

// isEmbedded is where objectmeta's walks act.
func isEmbedded(s *structuralschema.Structural) bool { return s.XEmbeddedResource }

// isListSetOrMap is where listtype's walk acts.
func isListSetOrMap(s *structuralschema.Structural) bool {
	return s.XListType != nil && (*s.XListType == "set" || *s.XListType == "map")
}
