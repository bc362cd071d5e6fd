package main

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/portcullis-io/portcullis/config"
	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/internal/crdvalidate"
)

// admission refuses, before translation, what kube-apiserver would refuse at `kubectl
// apply`: Backends and Gateway API objects are checked against the CRDs built into the
// binary (schema, defaults, CEL rules), so `portcullis translate` never reports as
// Accepted an object no cluster would store. Each refusal is worded as kubectl words it.
//
// The loader sets objects of CRD kinds aside (keep); they are validated afterwards on
// every CPU (the CEL rules cost about as much as translating the object) and only then
// decoded, so a field the schema lacks gets the API server's message, not the decoder's.
type admission struct {
	validator *crdvalidate.Validator
	source    string // the file being read, as kubectl names it
	held      []heldObject
}

// validationGCPercent is GOGC while validating (see validate).
const validationGCPercent = 300

// heldObject is an object of a CRD kind waiting for validation.
type heldObject struct {
	source  string
	doc     []byte // as read
	js      []byte // the same as JSON, as the loader converted it
	decoded bool   // the JSON decodes as an object (a document that does not is left to the loader's words)
	refusal string
}

func newAdmission() (*admission, error) {
	v, err := crdvalidate.New(config.CRDs, append(slices.Clone(config.CRDDirs), config.ExperimentalCRDDirs...)...)
	if err != nil {
		return nil, fmt.Errorf("reading the built-in CRDs: %w", err)
	}
	return &admission{validator: v}, nil
}

// keep is the loader's egress.Keep: objects of CRD kinds are held back for validate.
func (a *admission) keep(doc, js []byte, tm metav1.TypeMeta) bool {
	if !a.validator.Knows(tm.GroupVersionKind().GroupKind()) {
		return true
	}
	a.held = append(a.held, heldObject{source: a.source, doc: doc, js: js})
	return false
}

// validate checks every held object, in parallel, and returns the refusals in input
// order as `kubectl apply` prints them.
func (a *admission) validate() []string {
	// Validation allocates much short-lived garbage while the live heap is only the
	// input: at the default GOGC the collector would run every few objects. The heap
	// here stays far below what translation takes next, so let it grow more first.
	defer debug.SetGCPercent(debug.SetGCPercent(validationGCPercent))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(a.held); i = int(next.Add(1) - 1) {
				a.check(&a.held[i])
			}
		})
	}
	wg.Wait()
	var refusals []string
	for _, h := range a.held {
		if h.refusal != "" {
			refusals = append(refusals, h.refusal)
		}
	}
	return refusals
}

// check validates h and notes kubectl's message if it is refused. addTo decodes the
// JSON it validated without parsing YAML again; a document that does not decode as an
// object is left to the loader to report in its own words.
func (a *admission) check(h *heldObject) {
	obj, err := crdvalidate.DecodeJSON(h.js)
	if err != nil {
		return
	}
	h.decoded = true
	if err := a.validator.ValidateOwned(obj); err != nil {
		h.refusal = kubectlMessage(h.source, err)
	}
}

// addTo decodes the held objects into res, once validate found none refused: on every
// CPU, each into a Resources of its own, then joined in input order. (Not inside
// validate: there the collector runs less often, and the decoded objects would
// multiply the heap it lets grow.)
func (a *admission) addTo(res *egress.Resources) error {
	decoded := make([]*egress.Resources, len(a.held))
	errs := make([]error, len(a.held))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(a.held); i = int(next.Add(1) - 1) {
				decoded[i], errs[i] = a.held[i].decode()
			}
		})
	}
	wg.Wait()
	for i, h := range a.held {
		if errs[i] != nil {
			return fmt.Errorf("%s: %w", h.source, errs[i])
		}
		res.Append(decoded[i])
	}
	return nil
}

// decode is h as typed objects: from the JSON it was validated as, or, for a document
// that does not decode as an object, by the loader (whose words its error has).
func (h *heldObject) decode() (*egress.Resources, error) {
	res := &egress.Resources{}
	if h.decoded {
		return res, res.AddJSON(h.js)
	}
	return res, res.Load(bytes.NewReader(h.doc))
}

// kubectlMessage is the line `kubectl apply -f source` prints for err.
func kubectlMessage(source string, err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("Error from server (%s): error when creating %q: %s", status.Status().Reason, source, status.Status().Message)
	}
	return fmt.Sprintf("error: %q: %v", source, err)
}

// kubectlSource is how kubectl names a -f argument in its messages.
func kubectlSource(name string) string {
	if name == "-" {
		return "STDIN"
	}
	return name
}
