package translate

import (
	"reflect"
	"testing"

	egressv1alpha1 "github.com/portcullis-io/portcullis/api/v1alpha1"
	"github.com/portcullis-io/portcullis/internal/reflectfill"
)

// The Backend memo is only as correct as equalBackendSpec: a field it forgets would let
// a changed Backend reuse its old translation. This test walks every field of the API
// type by reflection, so a field added to BackendSpec fails it until it is compared.

// change is one way to alter a filled value at a path.
type change struct {
	path  string
	apply func()
}

// changes lists every way to alter v: each leaf gets another value, each pointer, slice
// and map is emptied, and a slice or map also gets a second element.
func changes(v reflect.Value, path string) []change {
	var out []change
	switch v.Kind() {
	case reflect.Pointer:
		out = append(out, change{path + " (nil)", func() { v.SetZero() }})
		out = append(out, changes(v.Elem(), path)...)
	case reflect.Slice:
		out = append(out,
			change{path + " (nil)", func() { v.SetZero() }},
			change{path + " (empty)", func() { v.Set(reflect.MakeSlice(v.Type(), 0, 0)) }},
			change{path + " (one more)", func() { v.Set(reflect.Append(v, v.Index(0))) }})
		out = append(out, changes(v.Index(0), path+"[0]")...)
	case reflect.Map:
		out = append(out,
			change{path + " (nil)", func() { v.SetZero() }},
			change{path + " (empty)", func() { v.Set(reflect.MakeMap(v.Type())) }},
			change{path + " (value)", func() {
				for _, k := range v.MapKeys() {
					v.SetMapIndex(k, reflect.ValueOf("other").Convert(v.Type().Elem()))
				}
			}})
	case reflect.Struct:
		for i := range v.NumField() {
			out = append(out, changes(v.Field(i), path+"."+v.Type().Field(i).Name)...)
		}
	case reflect.String:
		out = append(out, change{path, func() { v.SetString(v.String() + "x") }})
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		out = append(out, change{path, func() { v.SetInt(v.Int() + 1) }})
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		out = append(out, change{path, func() { v.SetUint(v.Uint() + 1) }})
	case reflect.Bool:
		out = append(out, change{path, func() { v.SetBool(!v.Bool()) }})
	default:
		panic("changes: unhandled kind " + v.Kind().String() + " at " + path)
	}
	return out
}

func filledSpec() *egressv1alpha1.BackendSpec {
	var s egressv1alpha1.BackendSpec
	reflectfill.Fill(reflect.ValueOf(&s).Elem())
	return &s
}

func TestEqualBackendSpecCoversEveryField(t *testing.T) {
	if !equalBackendSpec(filledSpec(), filledSpec()) {
		t.Fatal("two equal specs compare unequal")
	}
	count := len(changes(reflect.ValueOf(filledSpec()).Elem(), "spec"))
	if count < 50 {
		t.Fatalf("only %d changes found: the reflection walk is broken", count)
	}
	for k := range count {
		b := filledSpec()
		c := changes(reflect.ValueOf(b).Elem(), "spec")[k]
		c.apply()
		if reflect.DeepEqual(filledSpec(), b) {
			t.Fatalf("changing %s made no difference: the walk is broken", c.path)
		}
		if equalBackendSpec(filledSpec(), b) {
			t.Errorf("changing %s is not noticed", c.path)
		}
	}
}
