package main

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

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// writeResultYAML writes what printResult's JSON holds as YAML, one Envoy resource or
// status at a time: marshalling the whole result at once held it three times over
// (generic values, JSON, YAML), 2 GiB and 9.5 s for 10,000 Backends and routes. The
// bytes are those sigs.k8s.io/yaml writes for the whole document (keys in its order,
// sequences not indented under their key, no line folding: its encoder's width is
// unlimited); yamlEmitter writes each piece without the library's parser, on every
// CPU, and the pieces are written in order.
func writeResultYAML(out io.Writer, result translate.Result, opts envoyconfig.Options) error {
	return (&yamlEmitter{}).result(out, result, opts)
}

func (e *yamlEmitter) result(out io.Writer, result translate.Result, opts envoyconfig.Options) error {
	w := bufio.NewWriterSize(out, 1<<20)
	statuses := orderStatuses(e, result.Statuses)
	if len(result.Gateways) == 0 {
		w.WriteString("gateways: null\n")
	} else {
		w.WriteString("gateways:\n")
	}
	for _, gw := range result.Gateways {
		res, err := envoyconfig.Build(gw, opts)
		if err != nil {
			return fmt.Errorf("gateway %s: cannot build Envoy configuration: %w", gw.Name, err)
		}
		name, err := toYAML(gw.Name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "- name: %s", name)
		if err := writeXDSYAML(w, e, res); err != nil {
			return err
		}
	}
	if err := writeStatusesYAML(w, e, <-statuses); err != nil {
		return err
	}
	return w.Flush()
}

// writeXDSYAML writes a Gateway's resources under "  xds:", grouped and ordered as
// envoyconfig.Document's keys sort; secrets by name only.
func writeXDSYAML(w *bufio.Writer, e *yamlEmitter, r envoyconfig.Resources) error {
	var secrets []proto.Message
	for _, s := range r.Secrets {
		secrets = append(secrets, &tlsv3.Secret{Name: s.GetName()})
	}
	groups := []struct {
		key  string
		msgs []proto.Message
	}{
		{"clusters", messages(r.Clusters)}, {"endpoints", messages(r.Endpoints)},
		{"listeners", messages(r.Listeners)}, {"routes", messages(r.Routes)}, {"secrets", secrets},
	}
	empty := true
	for _, g := range groups {
		empty = empty && len(g.msgs) == 0
	}
	if empty {
		w.WriteString("  xds: {}\n")
		return nil
	}
	w.WriteString("  xds:\n")
	for _, g := range groups {
		if len(g.msgs) == 0 {
			continue
		}
		fmt.Fprintf(w, "    %s:\n", g.key)
		err := writeOrdered(w, len(g.msgs), func(i int, buf *bytes.Buffer) error {
			return e.resource(buf, g.msgs[i])
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// resource writes one Envoy resource as an item of the group's sequence: from its
// protojson value built directly (protoValue) when it can, else from protojson's text.
func (e *yamlEmitter) resource(buf *bytes.Buffer, m proto.Message) error {
	if v, ok := protoValue(m.ProtoReflect()); ok {
		n := buf.Len()
		err := e.emitItemValue(buf, v, 4)
		if !errors.Is(err, errNotEmittable) {
			return err
		}
		buf.Truncate(n)
	}
	js, err := protojson.MarshalOptions{Resolver: envoyconfig.Resolver, UseProtoNames: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("protojson: %w", err)
	}
	return e.item(buf, js, 4, func() (any, error) { return envoyconfig.JSONValue(m) })
}

// item writes a JSON document as a sequence item at indent, through the library
// (slow) when the emitter cannot promise its bytes.
func (e *yamlEmitter) item(buf *bytes.Buffer, js []byte, indent int, slow func() (any, error)) error {
	n := buf.Len()
	err := e.emitItem(buf, js, indent)
	if !errors.Is(err, errNotEmittable) {
		return err
	}
	buf.Truncate(n)
	e.slow.Add(1)
	v, err := slow()
	if err != nil {
		return err
	}
	return nested(buf, []any{v}, indent/2+1)
}

// writeOrdered renders n pieces on every CPU and writes them in order, a window at a
// time so that the rendered text never holds more than a window of the output.
func writeOrdered(w io.Writer, n int, render func(i int, buf *bytes.Buffer) error) error {
	const window = 256
	bufs := make([]bytes.Buffer, min(window, n))
	errs := make([]error, len(bufs))
	for start := 0; start < n; start += window {
		end := min(start+window, n)
		var next atomic.Int64
		next.Store(int64(start))
		var wg sync.WaitGroup
		for range runtime.GOMAXPROCS(0) {
			wg.Go(func() {
				for i := int(next.Add(1) - 1); i < end; i = int(next.Add(1) - 1) {
					bufs[i-start].Reset()
					errs[i-start] = render(i, &bufs[i-start])
				}
			})
		}
		wg.Wait()
		for i := range end - start {
			if errs[i] != nil {
				return errs[i]
			}
			if _, err := w.Write(bufs[i].Bytes()); err != nil {
				return err
			}
		}
	}
	return nil
}

// toYAML converts v as the whole document's conversion would: through JSON.
func toYAML(v any) ([]byte, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(js)
}

func messages[M proto.Message](ms []M) []proto.Message {
	out := make([]proto.Message, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}
