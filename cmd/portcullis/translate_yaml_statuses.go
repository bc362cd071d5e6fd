package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"sync"

	"github.com/portcullis-io/portcullis/egress/translate"
)

// statusKind is one kind's statuses (translate.Statuses' field of JSON name key), each
// object's marshalled on demand so that the output never holds them all at once.
type statusKind struct {
	key     string
	names   []string
	marshal func(name string) any
}

func kindOf[V any](key string, m map[string]V) statusKind {
	return statusKind{key: key, names: slices.Collect(maps.Keys(m)), marshal: func(n string) any { return m[n] }}
}

// statusKinds are the kinds with statuses, under the JSON names translate.Statuses has.
func statusKinds(s translate.Statuses) []statusKind {
	all := []statusKind{
		kindOf("gatewayClasses", s.GatewayClasses), kindOf("gateways", s.Gateways),
		kindOf("httpRoutes", s.HTTPRoutes), kindOf("tlsRoutes", s.TLSRoutes), kindOf("tcpRoutes", s.TCPRoutes),
		kindOf("backends", s.Backends), kindOf("backendTLSPolicies", s.BackendTLSPolicies), kindOf("xBackends", s.XBackends),
	}
	return slices.DeleteFunc(all, func(k statusKind) bool { return len(k.names) == 0 })
}

// statusOrder is what writeStatusesYAML writes, in the library's order: the kinds' keys,
// and each kind's names. Ordering ten thousand names through the library takes tens of
// milliseconds on one CPU, so result starts it before building the Envoy resources and
// takes it when the statuses are due.
type statusOrder struct {
	kinds []statusKind // in order, each with its names in order
	err   error
}

// orderStatuses starts ordering s's statuses, each kind on a goroutine of its own; the
// order comes on the channel.
func orderStatuses(e *yamlEmitter, s translate.Statuses) <-chan statusOrder {
	done := make(chan statusOrder, 1)
	go func() { done <- orderKinds(e, statusKinds(s)) }()
	return done
}

func orderKinds(e *yamlEmitter, kinds []statusKind) statusOrder {
	if len(kinds) == 0 {
		return statusOrder{}
	}
	byKey := map[string]statusKind{}
	for _, k := range kinds {
		byKey[k.key] = k
	}
	keys, err := e.order(slices.Collect(maps.Keys(byKey)))
	if err != nil {
		return statusOrder{err: err}
	}
	ordered := make([]statusKind, len(keys))
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		wg.Go(func() {
			ordered[i] = byKey[key]
			ordered[i].names, errs[i] = e.order(ordered[i].names)
		})
	}
	wg.Wait()
	return statusOrder{kinds: ordered, err: errors.Join(errs...)}
}

// writeStatusesYAML writes "statuses:" as the whole document's conversion does, one
// object's status at a time, in the order o gives.
func writeStatusesYAML(w *bufio.Writer, e *yamlEmitter, o statusOrder) error {
	if o.err != nil {
		return o.err
	}
	if len(o.kinds) == 0 {
		w.WriteString("statuses: {}\n")
		return nil
	}
	w.WriteString("statuses:\n")
	for _, kind := range o.kinds {
		w.WriteString("  " + kind.key + ":\n")
		err := writeOrdered(w, len(kind.names), func(i int, buf *bytes.Buffer) error {
			return e.entry(buf, kind.names[i], kind.marshal(kind.names[i]), 4)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// entry writes "key: value" as an entry of a mapping at indent, through the library
// when the emitter cannot promise its bytes.
func (e *yamlEmitter) entry(buf *bytes.Buffer, key string, value any, indent int) error {
	js, err := json.Marshal(value)
	if err != nil {
		return err
	}
	n := buf.Len()
	err = e.emitEntry(buf, key, js, indent)
	if !errors.Is(err, errNotEmittable) {
		return err
	}
	buf.Truncate(n)
	e.slow.Add(1)
	return nested(buf, map[string]json.RawMessage{key: js}, indent/2)
}

// nested writes v as the library writes it depth levels of mappings deep, by asking
// it for exactly that and dropping the lines of the levels above: the library breaks
// long strings at a column counted from the start of the line, so converting v alone
// and indenting it would break them elsewhere.
func nested(buf *bytes.Buffer, v any, depth int) error {
	var doc any = v
	for range depth {
		doc = map[string]any{"a": doc}
	}
	y, err := toYAML(doc)
	if err != nil {
		return err
	}
	for range depth {
		_, y, _ = bytes.Cut(y, []byte("\n"))
	}
	buf.Write(y)
	return nil
}
