// Package reflectfill fills values by reflection for tests that must notice a field
// added to a type: a filled value differs from the zero value in every field, so an
// equality or copy function that forgets one field fails the test.
package reflectfill

import "reflect"

// Fill sets every field reachable from v to a non-zero value: strings, numbers and
// booleans get values, pointers a target, slices one element, maps one entry. It
// panics on kinds the IR and API types do not use (channels, funcs, interfaces), so a
// new kind is noticed rather than left zero.
func Fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s")
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		Fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		Fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		key, val := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		Fill(key)
		Fill(val)
		v.SetMapIndex(key, val)
	case reflect.Struct:
		for i := range v.NumField() {
			Fill(v.Field(i))
		}
	default:
		panic("reflectfill: unhandled kind " + v.Kind().String())
	}
}
