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
// The digest is still the SHA-256 of the table's deterministic encoding (the version
// go-control-plane puts on the wire, which Envoy's ACKs carry), hashed from the parts:
// a deterministic encoding writes the fields in number order and a message field as its
// tag, its length and the message's own encoding, so the table's encoding is its fields
// numbered below virtual_hosts, each host as a field, then the fields above.
// TestTableFactsAreTheWholeTables checks it against the encoding of the whole.

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
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(head)
	if err != nil {
		return nil, fmt.Errorf("marshal route configuration %q: %w", rc.GetName(), err)
	}
	refs := map[string]bool{}
	if err := collectInEncoded(b, head.ProtoReflect().Descriptor(), refs); err != nil {
		return nil, fmt.Errorf("route configuration %q: %w", rc.GetName(), err)
	}
	below, above, err := splitEncoded(b, virtualHostsField.Number())
	if err != nil {
		return nil, fmt.Errorf("route configuration %q: %w", rc.GetName(), err)
	}
	h := sha256.New()
	h.Write(below)
	f := &facts{hosts: make(map[*routev3.VirtualHost]*hostFacts, len(rc.GetVirtualHosts()))}
	var field []byte
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
		field = protowire.AppendTag(field[:0], virtualHostsField.Number(), protowire.BytesType)
		h.Write(protowire.AppendVarint(field, uint64(len(hf.encoded))))
		h.Write(hf.encoded)
		for _, s := range hf.secrets {
			refs[s] = true
		}
	}
	h.Write(above)
	h.Sum(f.digest[:0])
	f.version = hex.EncodeToString(f.digest[:])
	f.secrets = slices.Sorted(maps.Keys(refs))
	return f, nil
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
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(vh)
	if err != nil {
		return nil, fmt.Errorf("marshal virtual host %q: %w", vh.GetName(), err)
	}
	refs := map[string]bool{}
	if err := collectInEncoded(b, vh.ProtoReflect().Descriptor(), refs); err != nil {
		return nil, fmt.Errorf("virtual host %q: %w", vh.GetName(), err)
	}
	hf := &hostFacts{encoded: b}
	if len(refs) > 0 {
		hf.secrets = slices.Sorted(maps.Keys(refs))
	}
	return hf, nil
}

// tableHead is rc without its virtual hosts: a new message sharing every other field's
// value with rc (neither is modified).
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

// splitEncoded splits a deterministic encoding into its fields numbered below num and
// the rest, refusing one whose fields are not in number order.
func splitEncoded(b []byte, num protowire.Number) (below, above []byte, err error) {
	at, last := len(b), protowire.Number(0)
	for off := 0; off < len(b); {
		n, typ, k := protowire.ConsumeTag(b[off:])
		if k < 0 {
			return nil, nil, fmt.Errorf("malformed field: %w", protowire.ParseError(k))
		}
		m := protowire.ConsumeFieldValue(n, typ, b[off+k:])
		if m < 0 {
			return nil, nil, fmt.Errorf("malformed field %d: %w", n, protowire.ParseError(m))
		}
		if n < last {
			return nil, nil, fmt.Errorf("field %d encoded after field %d", n, last)
		}
		if n >= num && last < num {
			at = off
		}
		last, off = n, off+k+m
	}
	return b[:at], b[at:], nil
}
