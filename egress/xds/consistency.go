package xds

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	tlsv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/transport_sockets/tls/v3"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/anypb"
)

// A snapshot is served over ADS only as a whole, and only when it is consistent: the
// route configurations are exactly those the listeners name, the endpoint resources
// exactly those the EDS clusters name (go-control-plane's Consistent), and the secrets
// exactly those the listeners, clusters and route tables name (consistency_counts.go
// checks the three).
//
// Secrets need the check as much: in ADS mode the snapshot cache answers a request only
// when it names every resource of the type the snapshot holds, so one secret nothing
// references would hold back every secret, and a referenced secret that is missing
// leaves its listener or cluster warming forever.

// maxNamed bounds the names an inconsistency error lists.
const maxNamed = 5

// someNames lists the first names in order, and how many more there are.
func someNames(names []string) string {
	slices.Sort(names)
	quoted := make([]string, 0, maxNamed)
	for _, name := range names[:min(len(names), maxNamed)] {
		quoted = append(quoted, fmt.Sprintf("%q", name))
	}
	list := strings.Join(quoted, ", ")
	if len(names) > maxNamed {
		list += fmt.Sprintf(" and %d more", len(names)-maxNamed)
	}
	if len(names) == 1 {
		return list + " is"
	}
	return list + " are"
}

// collectInAny looks for references in an Any's value, read as encoded
// (collectInEncoded) rather than decoded.
func collectInAny(typeURL string, value []byte, names map[string]bool) error {
	mt, err := protoregistry.GlobalTypes.FindMessageByURL(typeURL)
	if errors.Is(err, protoregistry.NotFound) {
		return nil // a type this binary does not know cannot be one it built
	}
	if err != nil {
		return err
	}
	if !mayReferenceSecrets(mt.Descriptor()) {
		return nil
	}
	if err := collectInEncoded(value, mt.Descriptor(), names); err != nil {
		return fmt.Errorf("decode %s: %w", typeURL, err)
	}
	return nil
}

var (
	sdsSecretConfigName = (&tlsv3.SdsSecretConfig{}).ProtoReflect().Descriptor().FullName()
	anyName             = (&anypb.Any{}).ProtoReflect().Descriptor().FullName()
	mayReference        sync.Map // protoreflect.FullName -> bool
)

// mayReferenceSecrets tells whether a message of type md can hold a secret reference:
// whether SdsSecretConfig or Any (which may hold anything) is among the types its
// fields lead to.
func mayReferenceSecrets(md protoreflect.MessageDescriptor) bool {
	if v, ok := mayReference.Load(md.FullName()); ok {
		return v.(bool)
	}
	found := false
	seen := map[protoreflect.FullName]bool{md.FullName(): true}
	for queue := []protoreflect.MessageDescriptor{md}; len(queue) > 0 && !found; queue = queue[1:] {
		d := queue[0]
		if found = d.FullName() == sdsSecretConfigName || d.FullName() == anyName; found {
			break
		}
		fields := d.Fields()
		for i := range fields.Len() {
			f := fields.Get(i)
			next := f.Message()
			if f.IsMap() {
				next = f.MapValue().Message()
			}
			if next != nil && !seen[next.FullName()] {
				seen[next.FullName()] = true
				queue = append(queue, next)
			}
		}
	}
	mayReference.Store(md.FullName(), found)
	return found
}
