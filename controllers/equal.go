package controllers

import (
	"bytes"
	"encoding/json"
)

// equalJSON compares two values by their JSON form: what the API server stores.
func equalJSON(a, b any) bool {
	x, errA := json.Marshal(a)
	y, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(x, y)
}
