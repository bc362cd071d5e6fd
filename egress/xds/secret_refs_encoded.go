package xds

import (
	"fmt"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// collectInEncoded adds the names of the secrets a message of type md, given encoded,
// fetches by SDS over ADS, looking through every nested message that may hold a
// reference, including typed configs (Any) of the types linked into this binary. It reads
// the encoding field by field instead of decoding it: decoding each Any whole to look
// inside was most of what publishing a caller change allocated (a listener's filter
// chain matcher is an Any that holds one range per pod: 10 MB at ten thousand pods, on
// every pod event), and walking a decoded route table of ten thousand virtual hosts by
// reflection cost more than marshaling it (42 ms against 40 ms per publish,
// BenchmarkPublishRouteTable10000). Only fields whose types may lead to a reference are
// read, an SdsSecretConfig is decoded (it is small), and an Any found inside is resolved
// the same way.
//
// A field the encoding repeats is visited at each occurrence, where decoding would keep
// the last (a singular message field set twice is merged, a map key set twice is
// replaced): the names found can then be more, never fewer. proto.Marshal, which
// encodes every resource factsOf reads and every Any the builder makes, writes each
// field once.
func collectInEncoded(b []byte, md protoreflect.MessageDescriptor, names map[string]bool) error {
	switch md.FullName() {
	case sdsSecretConfigName:
		sds := &tlsv3.SdsSecretConfig{}
		if err := proto.Unmarshal(b, sds); err != nil {
			return err
		}
		if sds.GetSdsConfig().GetAds() != nil {
			names[sds.GetName()] = true
		}
		return nil
	case anyName:
		return collectInEncodedAny(b, names)
	}
	fields := md.Fields()
	return eachEncodedField(b, func(num protowire.Number, typ protowire.Type, value []byte) error {
		fd := fields.ByNumber(num)
		if fd == nil || typ != protowire.BytesType {
			return nil // not a message (messages, map entries included, are length-delimited)
		}
		next := fd.Message() // a map's entry type, for a map
		if next == nil || !mayReferenceSecrets(next) {
			return nil
		}
		inner, n := protowire.ConsumeBytes(value)
		if n < 0 {
			return protowire.ParseError(n)
		}
		return collectInEncoded(inner, next, names)
	})
}

// Field numbers of google.protobuf.Any, fixed by its definition.
const (
	anyTypeURLField protowire.Number = 1
	anyValueField   protowire.Number = 2
)

// collectInEncodedAny reads an encoded Any's type and value (the last of each, as
// decoding keeps) and looks into the value as collectInAny does.
func collectInEncodedAny(b []byte, names map[string]bool) error {
	var typeURL string
	var value []byte
	err := eachEncodedField(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType || (num != anyTypeURLField && num != anyValueField) {
			return nil
		}
		content, n := protowire.ConsumeBytes(v)
		if n < 0 {
			return protowire.ParseError(n)
		}
		if num == anyTypeURLField {
			typeURL = string(content)
		} else {
			value = content
		}
		return nil
	})
	if err != nil {
		return err
	}
	return collectInAny(typeURL, value, names)
}

// eachEncodedField calls fn with every field of an encoded message: its number, wire
// type and encoded value (without the tag).
func eachEncodedField(b []byte, fn func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed field: %w", protowire.ParseError(n))
		}
		b = b[n:]
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fmt.Errorf("malformed field %d: %w", num, protowire.ParseError(m))
		}
		if err := fn(num, typ, b[:m]); err != nil {
			return err
		}
		b = b[m:]
	}
	return nil
}
