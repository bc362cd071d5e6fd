package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/proto"
	"sigs.k8s.io/yaml"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// writeResultYAML writes what printResult's JSON holds as YAML, one Envoy resource at a
// time: marshalling the whole result at once held it three times over (generic values,
// JSON, YAML), 2 GiB and 9.5 s for 10,000 Backends and routes, most of it converting
// one giant JSON document. The bytes are those sigs.k8s.io/yaml writes for the whole
// document: keys sorted, sequences not indented under their key, no line folding (the
// YAML encoder's width is unlimited), so each piece is converted alone and indented.
func writeResultYAML(out io.Writer, result translate.Result, opts envoyconfig.Options) error {
	w := bufio.NewWriterSize(out, 1<<20)
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
		if err := writeXDSYAML(w, res); err != nil {
			return err
		}
	}
	statuses, err := toYAML(map[string]any{"statuses": result.Statuses})
	if err != nil {
		return err
	}
	w.Write(statuses)
	return w.Flush()
}

// writeXDSYAML writes a Gateway's resources under "  xds:", grouped and ordered as
// envoyconfig.Document's keys sort; secrets by name only.
func writeXDSYAML(w *bufio.Writer, r envoyconfig.Resources) error {
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
		for _, m := range g.msgs {
			v, err := envoyconfig.JSONValue(m)
			if err != nil {
				return err
			}
			y, err := toYAML(v)
			if err != nil {
				return err
			}
			writeItem(w, y, "    ")
		}
	}
	return nil
}

// writeItem writes a YAML document as an item of a sequence at indent.
func writeItem(w *bufio.Writer, doc []byte, indent string) {
	lines := strings.SplitAfter(strings.TrimSuffix(string(doc), "\n"), "\n")
	for i, line := range lines {
		if i == 0 {
			w.WriteString(indent + "- ")
		} else {
			w.WriteString(indent + "  ")
		}
		w.WriteString(line)
	}
	w.WriteString("\n")
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
