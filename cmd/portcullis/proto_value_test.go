package main

import (
	"math"
	"reflect"
	"testing"
	"time"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/portcullis-io/portcullis/egress/envoyconfig"
)

// protojsonValue is what the emitter read before protoValue: protojson's text, decoded.
func protojsonValue(t *testing.T, m proto.Message) any {
	t.Helper()
	js, err := protojson.MarshalOptions{Resolver: envoyconfig.Resolver, UseProtoNames: true}.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestProtoValueIsProtojsons: for the Envoy resources of every sample (secrets with
// their keys included) and for messages holding each kind of value protoValue claims
// (durations of every precision and sign, wrappers, Any of fields and of well-known
// types, Struct, unknown enum numbers, bytes, floats and doubles in both notations and
// the special ones), protoValue gives exactly protojson's value; for what it leaves to
// protojson (an Any of a type the resolver does not list) it says so.
func TestProtoValueIsProtojsons(t *testing.T) {
	mustAny := func(m proto.Message) *anypb.Any {
		a, err := anypb.New(m)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	st, err := structpb.NewStruct(map[string]any{"a": "x", "b": true, "c": nil, "d": []any{"x", false}, "e": map[string]any{"f": "g"}})
	if err != nil {
		t.Fatal(err)
	}
	withNumber, _ := structpb.NewStruct(map[string]any{"n": 1.5})
	claimed := []proto.Message{
		durationpb.New(0), durationpb.New(time.Second), durationpb.New(1500 * time.Millisecond),
		durationpb.New(time.Second + time.Microsecond), durationpb.New(time.Nanosecond), durationpb.New(-1500 * time.Millisecond),
		&durationpb.Duration{Nanos: -500000000}, durationpb.New(36 * time.Hour),
		wrapperspb.UInt32(5), wrapperspb.Int64(-7), wrapperspb.UInt64(1 << 60), wrapperspb.Bool(false), wrapperspb.String("é"),
		wrapperspb.Bytes([]byte{0, 1, 255}), &emptypb.Empty{}, st, withNumber,
		wrapperspb.Double(1.5), wrapperspb.Double(443), wrapperspb.Double(0), wrapperspb.Double(math.Copysign(0, -1)),
		wrapperspb.Double(1e21), wrapperspb.Double(1e20), wrapperspb.Double(1e-7), wrapperspb.Double(-2.5e-6), wrapperspb.Double(1e-6),
		wrapperspb.Double(math.NaN()), wrapperspb.Double(math.Inf(1)), wrapperspb.Double(math.Inf(-1)), wrapperspb.Double(123456789.125),
		wrapperspb.Float(0.1), wrapperspb.Float(2), wrapperspb.Float(1e21), wrapperspb.Float(3e-7), wrapperspb.Float(float32(math.Inf(-1))),
		mustAny(wrapperspb.String("in an Any")), mustAny(&routerv3.Router{}), mustAny(&tlsv3.UpstreamTlsContext{Sni: "api.example.com"}),
		&clusterv3.Cluster{Name: "c", LbPolicy: clusterv3.Cluster_LbPolicy(999), ConnectTimeout: durationpb.New(250 * time.Millisecond),
			PerConnectionBufferLimitBytes: wrapperspb.UInt32(32768), Metadata: nil},
	}
	for _, m := range claimed {
		got, ok := protoValue(m.ProtoReflect())
		if !ok {
			t.Errorf("protoValue left %T %v to protojson", m, m)
			continue
		}
		if want := protojsonValue(t, m); !reflect.DeepEqual(got, want) {
			t.Errorf("%T %v:\n got %#v\nwant %#v", m, m, got, want)
		}
	}
	for _, m := range []proto.Message{mustAny(&emptypb.Empty{})} {
		if _, ok := protoValue(m.ProtoReflect()); ok {
			t.Errorf("protoValue claimed %T %v, whose number text protojson chooses", m, m)
		}
	}
	checked := 0
	for _, files := range [][]string{
		{"../../samples/00-gateway.yaml", "../../samples/01-fqdn-system-ca.yaml", "../../samples/08-traffic-split.yaml"},
		{"../../samples/00-gateway.yaml", "../../samples/06-connection-pool-circuit-breaker.yaml", "../../samples/07-http2.yaml"},
		{"../../samples/00-gateway.yaml", "../../samples/11-request-header-modifier.yaml", "../../samples/05-credential-injection.yaml"},
	} {
		res := buildSample(t, files...)
		var all []proto.Message
		for _, group := range [][]proto.Message{messages(res.Clusters), messages(res.Endpoints), messages(res.Listeners), messages(res.Routes), messages(res.Secrets)} {
			all = append(all, group...)
		}
		for _, m := range all {
			if got, ok := protoValue(m.ProtoReflect()); ok {
				if want := protojsonValue(t, m); !reflect.DeepEqual(got, want) {
					t.Errorf("%T %s:\n got %#v\nwant %#v", m, files, got, want)
				}
				checked++
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d sample resources built directly", checked)
	}
}
