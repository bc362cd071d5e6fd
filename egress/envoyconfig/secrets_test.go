package envoyconfig

import (
	"bytes"
	"encoding/base64"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/portcullis-io/portcullis/egress/ir"
)

// TestSecretBytesOnlyInSecrets searches every non-secret resource of every golden case,
// in wire and JSON form, for the bytes of every secret (raw and base64). As a control,
// the same search must find them in the Secret resources.
func TestSecretBytesOnlyInSecrets(t *testing.T) {
	searched := 0
	for _, tc := range goldenCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Build(tc.gw, testOptions)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := Static(tc.gw, testOptions, 19000)
			if err != nil {
				t.Fatal(err)
			}
			others := serialize(t, nonSecretMessages(res)...)
			others = append(others, serialize(t, asMessages(bs.StaticResources.Listeners)...)...)
			others = append(others, serialize(t, asMessages(bs.StaticResources.Clusters)...)...)
			secrets := serialize(t, asMessages(res.Secrets)...)
			for _, s := range tc.gw.Secrets {
				for _, data := range secretData(s) {
					searched++
					for _, form := range [][]byte{data, []byte(base64.StdEncoding.EncodeToString(data))} {
						if bytes.Contains(others, form) {
							t.Errorf("secret %s: its data appears outside the Secret resources", s.Name)
						}
						if !bytes.Contains(secrets, form) {
							t.Errorf("secret %s: its data is missing from the Secret resources (the search is broken)", s.Name)
						}
					}
				}
			}
		})
	}
	if searched < 5 {
		t.Errorf("only %d secret values searched; the golden cases should hold more", searched)
	}
}

// secretData is the sensitive content of a secret, each non-empty field.
func secretData(s ir.Secret) [][]byte {
	var out [][]byte
	for _, b := range [][]byte{s.Certificate, s.PrivateKey, s.Value} {
		if len(b) > 0 {
			out = append(out, b)
		}
	}
	return out
}

// serialize concatenates the wire and protojson forms of the messages.
func serialize(t *testing.T, msgs ...proto.Message) []byte {
	t.Helper()
	var out []byte
	for _, m := range msgs {
		wire, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		j, err := protojson.MarshalOptions{Resolver: Resolver}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, wire...), j...)
	}
	return out
}
