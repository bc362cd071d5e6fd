package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// protoValue is the value decodeJSON gives for protojson's output of m (proto field
// names, the envoyconfig resolver), built from m directly: marshalling every Envoy
// resource to JSON text and reading it back was a fifth of `portcullis translate`'s
// CPU. It covers what Envoy resources hold: scalars, enums, bytes, lists, maps, nested
// messages, and the well-known types Any, Duration, Struct, Value, ListValue, Empty and
// the wrappers. For anything else (timestamps, field masks, extensions, invalid UTF-8,
// an Any it cannot resolve) it reports false and the caller takes protojson's text.
func protoValue(m protoreflect.Message) (any, bool) {
	switch m.Descriptor().FullName() {
	case "google.protobuf.Any":
		return anyValue(m)
	case "google.protobuf.Duration":
		return durationValue(m)
	case "google.protobuf.Struct":
		return structValue(m)
	case "google.protobuf.Value":
		return valueValue(m)
	case "google.protobuf.ListValue":
		return listValue(m.Get(m.Descriptor().Fields().ByName("values")).List(), m.Descriptor().Fields().ByName("values"))
	case "google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
		"google.protobuf.BytesValue", "google.protobuf.FloatValue", "google.protobuf.DoubleValue":
		fd := m.Descriptor().Fields().ByName("value")
		return singularValue(m.Get(fd), fd)
	case "google.protobuf.Timestamp", "google.protobuf.FieldMask":
		return nil, false
	}
	return fieldsValue(m)
}

// fieldsValue is a message without a JSON form of its own: its populated fields.
func fieldsValue(m protoreflect.Message) (any, bool) {
	out := map[string]any{}
	ok := true
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.IsExtension() || fd.Kind() == protoreflect.GroupKind {
			ok = false
			return false
		}
		out[fd.TextName()], ok = fieldValue(v, fd)
		return ok
	})
	return out, ok
}

func fieldValue(v protoreflect.Value, fd protoreflect.FieldDescriptor) (any, bool) {
	switch {
	case fd.IsList():
		return listValue(v.List(), fd)
	case fd.IsMap():
		return mapValue(v.Map(), fd)
	}
	return singularValue(v, fd)
}

func listValue(l protoreflect.List, fd protoreflect.FieldDescriptor) (any, bool) {
	out := make([]any, l.Len())
	for i := range l.Len() {
		var ok bool
		if out[i], ok = singularValue(l.Get(i), fd); !ok {
			return nil, false
		}
	}
	return out, true
}

func mapValue(mp protoreflect.Map, fd protoreflect.FieldDescriptor) (any, bool) {
	out := make(map[string]any, mp.Len())
	ok := true
	mp.Range(func(k protoreflect.MapKey, v protoreflect.Value) bool {
		var val any
		if val, ok = singularValue(v, fd.MapValue()); ok {
			out[k.String()] = val
		}
		return ok
	})
	return out, ok
}

// singularValue is one value of fd's kind as protojson writes it.
func singularValue(v protoreflect.Value, fd protoreflect.FieldDescriptor) (any, bool) {
	switch fd.Kind() {
	case protoreflect.BoolKind:
		return v.Bool(), true
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		return json.Number(strconv.FormatInt(v.Int(), 10)), true
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		return json.Number(strconv.FormatUint(v.Uint(), 10)), true
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		return strconv.FormatInt(v.Int(), 10), true
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		return strconv.FormatUint(v.Uint(), 10), true
	case protoreflect.StringKind:
		return v.String(), utf8.ValidString(v.String())
	case protoreflect.BytesKind:
		return base64.StdEncoding.EncodeToString(v.Bytes()), true
	case protoreflect.EnumKind:
		return enumValue(v.Enum(), fd)
	case protoreflect.FloatKind:
		return floatValue(v.Float(), 32), true
	case protoreflect.DoubleKind:
		return floatValue(v.Float(), 64), true
	case protoreflect.MessageKind:
		return protoValue(v.Message())
	}
	return nil, false // groups
}

// floatValue is a float as protojson writes it: encoding/json's rule (fixed notation
// from 1e-6 up to 1e21, exponent notation beyond, no leading zero in a negative
// exponent), and NaN and the infinities as strings.
func floatValue(n float64, bitSize int) any {
	switch {
	case math.IsNaN(n):
		return "NaN"
	case math.IsInf(n, 1):
		return "Infinity"
	case math.IsInf(n, -1):
		return "-Infinity"
	}
	format := byte('f')
	if abs := math.Abs(n); abs != 0 {
		small, large := abs < 1e-6, abs >= 1e21
		if bitSize == 32 {
			small, large = float32(abs) < 1e-6, float32(abs) >= 1e21
		}
		if small || large {
			format = 'e'
		}
	}
	text := strconv.FormatFloat(n, format, -1, bitSize)
	if format == 'e' {
		if i := len(text) - 4; i >= 0 && text[i:i+3] == "e-0" {
			text = text[:i+2] + text[i+3:]
		}
	}
	return json.Number(text)
}

func enumValue(n protoreflect.EnumNumber, fd protoreflect.FieldDescriptor) (any, bool) {
	if fd.Enum().FullName() == "google.protobuf.NullValue" {
		return nil, true
	}
	if ev := fd.Enum().Values().ByNumber(n); ev != nil {
		return string(ev.Name()), true
	}
	return json.Number(strconv.FormatInt(int64(n), 10)), true
}

// anyValue is {"@type": url, ...the message's fields}, or {"@type": url, "value": its
// JSON} for a well-known type with a JSON form of its own.
func anyValue(m protoreflect.Message) (any, bool) {
	fields := m.Descriptor().Fields()
	url := m.Get(fields.ByName("type_url")).String()
	mt, err := envoyconfig.Resolver.FindMessageByURL(url)
	if url == "" || err != nil {
		return nil, false
	}
	inner := mt.New()
	if err := (proto.UnmarshalOptions{AllowPartial: true, Resolver: envoyconfig.Resolver}).Unmarshal(m.Get(fields.ByName("value")).Bytes(), inner.Interface()); err != nil {
		return nil, false
	}
	v, ok := protoValue(inner)
	if !ok {
		return nil, false
	}
	if obj, isFields := v.(map[string]any); isFields && !ownJSON(inner.Descriptor().FullName()) {
		obj["@type"] = url
		return obj, true
	}
	return map[string]any{"@type": url, "value": v}, true
}

// ownJSON tells the well-known types protojson writes as something else than their
// fields (inside an Any, under "value").
func ownJSON(name protoreflect.FullName) bool {
	switch name {
	case "google.protobuf.Any", "google.protobuf.Duration", "google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue",
		"google.protobuf.BoolValue", "google.protobuf.Int32Value", "google.protobuf.Int64Value",
		"google.protobuf.UInt32Value", "google.protobuf.UInt64Value", "google.protobuf.StringValue",
		"google.protobuf.BytesValue", "google.protobuf.Empty":
		return true
	}
	return false
}

// durationValue is protojson's "1.500s": 0, 3, 6 or 9 fractional digits.
func durationValue(m protoreflect.Message) (any, bool) {
	fields := m.Descriptor().Fields()
	secs, nanos := m.Get(fields.ByName("seconds")).Int(), m.Get(fields.ByName("nanos")).Int()
	const maxSeconds = 315576000000
	if secs < -maxSeconds || secs > maxSeconds || nanos <= -1e9 || nanos >= 1e9 || (secs > 0 && nanos < 0) || (secs < 0 && nanos > 0) {
		return nil, false
	}
	sign := ""
	if secs < 0 || nanos < 0 {
		sign, secs, nanos = "-", -secs, -nanos
	}
	x := fmt.Sprintf("%s%d.%09d", sign, secs, nanos)
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, "000")
	x = strings.TrimSuffix(x, ".000")
	return x + "s", true
}

func structValue(m protoreflect.Message) (any, bool) {
	fd := m.Descriptor().Fields().ByName("fields")
	return mapValue(m.Get(fd).Map(), fd)
}

// valueValue is a google.protobuf.Value: its one kind.
func valueValue(m protoreflect.Message) (any, bool) {
	od := m.Descriptor().Oneofs().ByName("kind")
	fd := m.WhichOneof(od)
	if fd == nil {
		return nil, false
	}
	return singularValue(m.Get(fd), fd)
}
