package main

import (
	"bytes"
	"encoding/json"
	"net/netip"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress"
	"github.com/portcullis-io/portcullis/egress/envoyconfig"
	"github.com/portcullis-io/portcullis/egress/translate"
)

// libraryDecode is encoding/json's answer, which decodeJSON must give.
func libraryDecode(js []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v)
}

// TestDecodeJSONIsTheLibrarys: for well-formed and malformed documents alike, decodeJSON
// gives encoding/json's value (numbers as written), or an error where it errs.
func TestDecodeJSONIsTheLibrarys(t *testing.T) {
	docs := []string{
		`{}`, `[]`, `null`, `true`, `false`, `0`, `-0`, `1.5e-3`, `-12E+2`, `123456789012345678901234567890`,
		`{"a":1,"b":[1,2,{"c":null}],"d":"e"}`,
		` { "a" : [ 1 , 2 ] , "b" : { } } `,
		`{"a":1,"a":2}`,
		`"tab\tnew\nquote\"slash\/back\\"`,
		`"\u00e9\ud83d\ude00 and a lone \ud800 surrogate"`,
		`"snow ☃ and emoji 😀"`,
		"\"invalid \xff utf-8\"",
		"\"control \x01 character\"",
		`{"a":1,}`, `[1,]`, `{"a" 1}`, `01`, `1.`, `.5`, `-`, `1e`, `tru`, `truex`, `[1 2]`, `{"a":1}x`, `"open`, `"bad \x escape"`, ``,
	}
	for _, doc := range docs {
		got, gotErr := decodeJSON([]byte(doc))
		want, wantErr := libraryDecode([]byte(doc))
		if (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%q: error %v, the library's %v", doc, gotErr, wantErr)
			continue
		}
		if gotErr == nil && !reflect.DeepEqual(got, want) {
			t.Errorf("%q: %#v, the library's %#v", doc, got, want)
		}
	}
}

// TestDecodeJSONReadsProtojsonItself: protojson's output (with the spacing it varies
// on purpose) is read by the hand reader, not handed to the library, and gives the
// library's value: the Envoy resources of three samples.
func TestDecodeJSONReadsProtojsonItself(t *testing.T) {
	res := buildSample(t, "../../samples/00-gateway.yaml", "../../samples/01-fqdn-system-ca.yaml", "../../samples/08-traffic-split.yaml")
	checked := 0
	var all []proto.Message
	for _, group := range [][]proto.Message{messages(res.Clusters), messages(res.Endpoints), messages(res.Listeners), messages(res.Routes)} {
		all = append(all, group...)
	}
	for _, m := range all {
		js, err := protojson.MarshalOptions{Resolver: envoyconfig.Resolver, UseProtoNames: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		r := jsonReader{in: js}
		got, ok := r.value()
		if !ok || !r.end() {
			t.Fatalf("the hand reader gave up on protojson output:\n%s", js)
		}
		want, err := libraryDecode(js)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("hand reader %#v, library %#v (%v)", got, want, err)
		}
		checked++
	}
	if checked < 4 {
		t.Fatalf("only %d resources checked", checked)
	}
}

// buildSample translates files (the samples' hostnames resolving to a public address)
// and builds the Envoy resources of their one Gateway.
func buildSample(t *testing.T, files ...string) envoyconfig.Resources {
	t.Helper()
	adm, err := newAdmission()
	if err != nil {
		t.Fatal(err)
	}
	res, err := loadFiles(files, adm)
	if err != nil {
		t.Fatal(err)
	}
	if err := adm.addTo(res); err != nil {
		t.Fatal(err)
	}
	addrs := egress.Addresses{}
	for _, name := range []string{"api.stripe.com", "api.sendgrid.com", "api.push.apple.com"} {
		addrs[name] = egress.Resolution{State: egress.ResolutionResolved, Vetted: []egress.VettedAddress{{IP: netip.MustParseAddr("140.82.112.6")}}}
	}
	result := translate.Translate(res, addrs, translate.Options{Now: time.Unix(0, 0)})
	if len(result.Gateways) != 1 {
		t.Fatalf("%d Gateways translated, want 1", len(result.Gateways))
	}
	out, err := envoyconfig.Build(result.Gateways[0], envoyconfig.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
