package translate

import (
	"testing"
)

// TestReferencesCoverEverySecretTranslationReads checks, on every golden input, that
// translating with only the referenced Secrets and ConfigMaps gives the same result as
// translating with all of them: the manager may then read nothing else.
func TestReferencesCoverEverySecretTranslationReads(t *testing.T) {
	for _, in := range goldenInputs(t) {
		res, addrs, opts := loadGoldenInput(t, in)
		full := renderResult(t, Translate(res, addrs, opts))
		keep := map[ObjectRef]bool{}
		for _, r := range References(res) {
			keep[r] = true
		}
		trimmed := res.DeepCopy()
		trimmed.Secrets, trimmed.ConfigMaps = nil, nil
		for _, s := range res.Secrets {
			if keep[ObjectRef{Kind: "Secret", Name: nameOf(&s)}] {
				trimmed.Secrets = append(trimmed.Secrets, s)
			}
		}
		for _, c := range res.ConfigMaps {
			if keep[ObjectRef{Kind: "ConfigMap", Name: nameOf(&c)}] {
				trimmed.ConfigMaps = append(trimmed.ConfigMaps, c)
			}
		}
		if got := renderResult(t, Translate(trimmed, addrs, opts)); string(got) != string(full) {
			t.Errorf("%s: translating with only the referenced objects differs from translating with all", in)
		}
	}
}
