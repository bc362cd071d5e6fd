package translate

import (
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// crossRef is a reference from an object in one namespace to an object in another.
type crossRef struct {
	fromGroup, fromKind, fromNamespace   string
	toGroup, toKind, toNamespace, toName string
}

// refAllowed reports whether a reference may cross namespaces: it may when it does not
// cross, or when a ReferenceGrant in the target namespace allows it.
func (t *translator) refAllowed(r crossRef) bool {
	if r.fromNamespace == r.toNamespace {
		return true
	}
	for _, g := range t.grants {
		if g.Namespace == r.toNamespace && grantAllows(g, r) {
			return true
		}
	}
	return false
}

func grantAllows(g *gwapiv1.ReferenceGrant, r crossRef) bool {
	fromOK := false
	for _, f := range g.Spec.From {
		if string(f.Group) == r.fromGroup && string(f.Kind) == r.fromKind && string(f.Namespace) == r.fromNamespace {
			fromOK = true
			break
		}
	}
	if !fromOK {
		return false
	}
	for _, to := range g.Spec.To {
		if string(to.Group) == r.toGroup && string(to.Kind) == r.toKind && (to.Name == nil || string(*to.Name) == r.toName) {
			return true
		}
	}
	return false
}
