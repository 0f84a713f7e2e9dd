package event

import (
	"encoding/hex"
	"fmt"
	"strings"
)

// ParseTraceParent checks a W3C trace context traceparent header value
// ("00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>", lowercase,
// ids not all zero) and returns its trace id, parent span id and flags
// as raw bytes. GoalSubmittedData.TraceParent must pass it.
func ParseTraceParent(s string) (trace [16]byte, span [8]byte, flags byte, err error) {
	parts := strings.Split(s, "-")
	bad := func(why string) error {
		return fmt.Errorf("event: traceparent %q: %s (want 00-<32 hex digits>-<16 hex digits>-<2 hex digits>, W3C trace context)", s, why)
	}
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
		return trace, span, 0, bad("not of version 00's form")
	}
	if strings.ToLower(s) != s {
		return trace, span, 0, bad("upper-case hex")
	}
	var f [1]byte
	if _, err := hex.Decode(trace[:], []byte(parts[1])); err != nil {
		return trace, span, 0, bad("trace id is not hex")
	}
	if _, err := hex.Decode(span[:], []byte(parts[2])); err != nil {
		return trace, span, 0, bad("parent id is not hex")
	}
	if _, err := hex.Decode(f[:], []byte(parts[3])); err != nil {
		return trace, span, 0, bad("flags are not hex")
	}
	if trace == [16]byte{} || span == [8]byte{} {
		return trace, span, 0, bad("an all-zero id")
	}
	return trace, span, f[0], nil
}
