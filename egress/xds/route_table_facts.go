package xds

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"

	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// A route table is one resource, but when every route of a namespace is in it, it holds
// ten thousand virtual hosts, and a route created or edited changes one of them: the
// build makes only that host again and hands over the others' very messages
// (envoyconfig's route_hosts.go). So a table's facts are learnt host by host too: each
// virtual host message is validated, encoded and searched for secret references once,
// and the next publish of the table takes what it learnt of every host it has seen.
//
// go-control-plane encodes every resource it sends itself, and a table of 10,000 hosts
// took ~45 ms to encode on the stream's only goroutine, delaying the endpoints Envoy asks
// for next. So what it is given to serve is the table's wire form: the table without
// its hosts, carrying the hosts' encodings as unknown fields (protobuf's way of holding
// fields a message keeps encoded, which an encoder writes out verbatim after the known
// ones). Envoy decodes it to the very same table (a repeated field's entries may come in
// any place); encoding it is a copy. The digest, and so the version on the wire, is the
// SHA-256 of that encoding: the table's own fields, then each host as a field.
// TestTableFactsAreTheWholeTables checks both against the encoding of the whole table.

// hostFacts are the facts of one virtual host message: its encoding (kept for the next
// table's hash, about 200 bytes a host) and the secrets it references.
type hostFacts struct {
	encoded []byte
	secrets []string
}

// virtualHostsField is RouteConfiguration's virtual_hosts.
var virtualHostsField = (&routev3.RouteConfiguration{}).ProtoReflect().Descriptor().Fields().ByName("virtual_hosts")

// tableFacts learns the facts of rc, taking those of its hosts that prev (the facts of
// the table of the same name in the last snapshot, or nil) learnt. A table that fails
// its constraints is validated whole again, so that the error is the one validate gives.
func tableFacts(rc *routev3.RouteConfiguration, prev *facts) (*facts, error) {
	head := tableHead(rc)
	if err := head.ValidateAll(); err != nil {
		return nil, validate(rc)
	}
	refs := map[string]bool{}
	b, err := encodeFindingSecrets(head, fmt.Sprintf("route configuration %q", rc.GetName()), refs)
	if err != nil {
		return nil, err
	}
	f := &facts{hosts: make(map[*routev3.VirtualHost]*hostFacts, len(rc.GetVirtualHosts()))}
	size := 0
	for _, vh := range rc.GetVirtualHosts() {
		hf := prev.host(vh)
		if hf == nil {
			if hf, err = virtualHostFacts(vh); err != nil {
				if invalid := validate(rc); invalid != nil {
					return nil, invalid
				}
				return nil, fmt.Errorf("route configuration %q: %w", rc.GetName(), err)
			}
		}
		f.hosts[vh] = hf
		size += protowire.SizeTag(virtualHostsField.Number()) + protowire.SizeBytes(len(hf.encoded))
		for _, s := range hf.secrets {
			refs[s] = true
		}
	}
	fields := hostFields(rc.GetVirtualHosts(), f.hosts, size)
	h := sha256.New()
	h.Write(b)
	h.Write(fields)
	h.Sum(f.digest[:0])
	f.version = hex.EncodeToString(f.digest[:])
	head.ProtoReflect().SetUnknown(fields)
	f.wire = head
	f.secrets = slices.Sorted(maps.Keys(refs))
	return f, nil
}

// hostFields is the hosts' encodings as virtual_hosts fields, in the table's order, in
// one buffer of the size they take: grown by appending, a table of 10,000 hosts
// allocated about twice its 4 MB on every publish.
func hostFields(hosts []*routev3.VirtualHost, learnt map[*routev3.VirtualHost]*hostFacts, size int) []byte {
	fields := make([]byte, 0, size)
	for _, vh := range hosts {
		fields = protowire.AppendTag(fields, virtualHostsField.Number(), protowire.BytesType)
		fields = protowire.AppendBytes(fields, learnt[vh].encoded)
	}
	return fields
}

// host returns the facts f learnt about the virtual host message vh, or nil.
func (f *facts) host(vh *routev3.VirtualHost) *hostFacts {
	if f == nil {
		return nil
	}
	return f.hosts[vh]
}

// virtualHostFacts validates and encodes one virtual host and finds its secrets.
func virtualHostFacts(vh *routev3.VirtualHost) (*hostFacts, error) {
	if err := vh.ValidateAll(); err != nil {
		return nil, err
	}
	refs := map[string]bool{}
	b, err := encodeFindingSecrets(vh, fmt.Sprintf("virtual host %q", vh.GetName()), refs)
	if err != nil {
		return nil, err
	}
	hf := &hostFacts{encoded: b}
	if len(refs) > 0 {
		hf.secrets = slices.Sorted(maps.Keys(refs))
	}
	return hf, nil
}

// encodeFindingSecrets encodes m deterministically and adds the secrets it references
// over ADS to refs; what names m in errors.
func encodeFindingSecrets(m proto.Message, what string, refs map[string]bool) ([]byte, error) {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("marshal %s: %w", what, err)
	}
	if err := collectInEncoded(b, m.ProtoReflect().Descriptor(), refs); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return b, nil
}

// tableHead is rc without its virtual hosts: a new message sharing every other field's
// value with rc (rc is not modified).
func tableHead(rc *routev3.RouteConfiguration) *routev3.RouteConfiguration {
	head := &routev3.RouteConfiguration{}
	dst := head.ProtoReflect()
	rc.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != virtualHostsField {
			dst.Set(fd, v)
		}
		return true
	})
	return head
}
