package canonjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Sorted returns data, one JSON value, in a canonical form for hashing:
// compact, object keys sorted (as encoding/json sorts map keys), numbers
// kept as written. Two encodings of the same value that differ only in
// whitespace or key order give the same bytes. Empty data is "null".
func Sorted(data []byte) ([]byte, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return []byte("null"), nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("canonjson: more than one JSON value")
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("canonjson: %w", err)
	}
	return out, nil
}
