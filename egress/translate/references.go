package translate

import (
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/types"
	gwapiv1 "sigs.k8s.io/gateway-api/apis/v1"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/egress"
)

// ObjectRef names a Secret or ConfigMap that translation reads.
type ObjectRef struct {
	Kind string // "Secret" or "ConfigMap"
	Name types.NamespacedName
}

// References lists the Secrets and ConfigMaps the objects in res refer to: the manager
// reads only these, never every Secret in the cluster. It lives beside the code that
// reads them so the two cannot disagree.
func References(res *egress.Resources) []ObjectRef {
	set := map[ObjectRef]bool{}
	add := adder(func(r ObjectRef) { set[r] = true })
	for i := range res.Gateways {
		gatewayReferences(&res.Gateways[i], add)
	}
	for i := range res.Backends {
		backendReferences(res.Backends[i], add)
	}
	for i := range res.XBackends {
		if conv, e := convertXBackend(&res.XBackends[i]); e == nil {
			backendReferences(conv.b, add)
		}
	}
	for i := range res.BackendTLSPolicies {
		p := &res.BackendTLSPolicies[i]
		for _, ref := range p.Spec.Validation.CACertificateRefs {
			if ref.Group == "" && (ref.Kind == "ConfigMap" || ref.Kind == "Secret") {
				add(string(ref.Kind), p.Namespace, string(ref.Name))
			}
		}
	}
	out := make([]ObjectRef, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	SortReferences(out)
	return out
}

// BackendReferences lists the Secrets and ConfigMaps one Backend refers to, as
// References counts them (once each, in no order): the manager redoes only the changed
// Backends' references (controllers/gather_walks.go).
func BackendReferences(b *egressv1alpha1.Backend) []ObjectRef {
	var out []ObjectRef
	backendReferences(b, adder(func(r ObjectRef) {
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}))
	return out
}

// SortReferences puts refs in the order References returns them: by kind, then name.
func SortReferences(refs []ObjectRef) {
	sort.Slice(refs, func(i, j int) bool {
		if refs[i].Kind != refs[j].Kind {
			return refs[i].Kind < refs[j].Kind
		}
		return lessName(refs[i].Name, refs[j].Name)
	})
}

// adder is the add function the walks call with a kind ("" is a Secret), namespace and
// name, giving each reference to put.
func adder(put func(ObjectRef)) func(kind, ns, name string) {
	return func(kind, ns, name string) {
		if kind == "" {
			kind = "Secret"
		}
		put(ObjectRef{Kind: kind, Name: types.NamespacedName{Namespace: ns, Name: name}})
	}
}

func gatewayReferences(gw *gwapiv1.Gateway, add func(kind, ns, name string)) {
	if tls := gw.Spec.TLS; tls != nil && tls.Backend != nil && tls.Backend.ClientCertificateRef != nil {
		ref := tls.Backend.ClientCertificateRef
		ns := gw.Namespace
		if ref.Namespace != nil {
			ns = string(*ref.Namespace)
		}
		add("Secret", ns, string(ref.Name))
	}
	for _, l := range gw.Spec.Listeners {
		if l.TLS == nil {
			continue
		}
		for _, ref := range l.TLS.CertificateRefs {
			ns := gw.Namespace
			if ref.Namespace != nil {
				ns = string(*ref.Namespace)
			}
			add("Secret", ns, string(ref.Name))
		}
	}
}

func backendReferences(b *egressv1alpha1.Backend, add func(kind, ns, name string)) {
	if tls := destinationOf(b).tls; tls != nil {
		for _, ca := range tls.CACertificates {
			kind := ""
			if ca.SecretRef.Kind != nil {
				kind = *ca.SecretRef.Kind
			}
			add(kind, b.Namespace, ca.SecretRef.Name)
		}
		if tls.ClientCertificate != nil {
			add("Secret", b.Namespace, tls.ClientCertificate.SecretRef.Name)
		}
	}
	for _, e := range b.Spec.Extensions {
		if e.Type != egressv1alpha1.ExtensionCredentialInjection {
			continue
		}
		if cfg, err := parseConfig(e); err == nil {
			if cred, err := parseCredential(cfg); err == nil {
				add("Secret", b.Namespace, cred.secret)
			}
		}
	}
}
