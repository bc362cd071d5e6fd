package translate

import (
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
	add := func(kind, ns, name string) {
		if kind == "" {
			kind = "Secret"
		}
		set[ObjectRef{Kind: kind, Name: types.NamespacedName{Namespace: ns, Name: name}}] = true
	}
	for i := range res.Gateways {
		gatewayReferences(&res.Gateways[i], add)
	}
	for i := range res.Backends {
		backendReferences(&res.Backends[i], add)
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
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return lessName(out[i].Name, out[j].Name)
	})
	return out
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
