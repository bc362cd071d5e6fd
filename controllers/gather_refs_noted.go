package controllers

import (
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// Reading again only the referenced Secrets and ConfigMaps that changed. Each gather
// asked the cache for the metadata of every referenced object to see whether its
// resourceVersion moved (a deep copy of the metadata each): with per-destination client
// certificates that is two reads a Backend, 20,000 at 10,000 Backends, whatever
// changed. The metadata watches now note the names of the objects their events carry,
// as the counting predicate does for listed kinds (gather_patch.go), and a gather reads
// again only the referenced objects noted since the last one, and those it has not read
// yet; the others are the objects last read. When the references are the last ones and
// none was noted, the last Secrets and ConfigMaps are handed out at once.
//
// A name is noted after the informer stored the event's object, and a gather takes the
// names before it reads: an object noted before the take is read after its new version
// was stored. More than patchLimit names between two gathers, an event without an
// object, or a gather that failed half-way make the next gather read every referenced
// object, as before.

// refNotes notes the names of the Secrets and ConfigMaps whose metadata events came.
type refNotes struct {
	secrets, configMaps touchedNames
	// wiredSecrets and wiredConfigMaps are set once the watch of the kind notes: a
	// gatherer without both reads everything.
	wiredSecrets, wiredConfigMaps bool
}

// noting returns the predicate of the metadata watch of kind ("Secret" or "ConfigMap").
func (n *refNotes) noting(kind string) predicate.Predicate {
	if kind == "ConfigMap" {
		n.wiredConfigMaps = true
		return passingEach(n.configMaps.note)
	}
	n.wiredSecrets = true
	return passingEach(n.secrets.note)
}

// refsNoted is what a gather took of the notes: the objects noted, or none to trust
// (every referenced object is read).
type refsNoted struct {
	trusted bool
	noted   map[translate.ObjectRef]bool
}

// take takes the notes. trustLast is false after a gather that did not read every noted
// object it took.
func (n *refNotes) take(trustLast bool) refsNoted {
	secrets, okS := n.secrets.take()
	configMaps, okC := n.configMaps.take()
	out := refsNoted{trusted: n.wiredSecrets && n.wiredConfigMaps && trustLast && okS && okC, noted: map[translate.ObjectRef]bool{}}
	for _, name := range secrets {
		out.noted[translate.ObjectRef{Kind: "Secret", Name: name}] = true
	}
	for _, name := range configMaps {
		out.noted[translate.ObjectRef{Kind: "ConfigMap", Name: name}] = true
	}
	return out
}

// trusts tells whether the object last read of ref may be handed out without reading it.
func (r refsNoted) trusts(ref translate.ObjectRef) bool {
	return r.trusted && !r.noted[ref]
}

// nothingNew tells whether no object was noted and the last read may be trusted.
func (r refsNoted) nothingNew() bool {
	return r.trusted && len(r.noted) == 0
}
