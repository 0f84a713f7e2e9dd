package event

import (
	"fmt"
	"strings"
)

// MaxStepIDLen caps step and subgoal ids, in bytes.
const MaxStepIDLen = 64

// MaxRunIDLen caps run ids, in bytes (a UUID has 36).
const MaxRunIDLen = 64

// ValidStepID reports whether id may name a step: nil, or an error that
// says what is wrong ("step id \"a..b\": …").
//
// The grammar: 1 to MaxStepIDLen bytes of ASCII letters, digits, '_', '-'
// and '.', where a dot only separates two non-empty parts —
//
//	id = part *( "." part )        part = 1*( ALPHA / DIGIT / "_" / "-" )
//
// so "build", "s1.2" and "db-migrate_2" are ids, and ".", "..", ".a",
// "a.", "a..b", "a b", "a*", ">", "a/b" and "é" are not. Why: a step id
// travels in subjects — its output goes to agentic.log.<run>.<step> — where
// each part must be a NATS subject token (no empty token, no wildcard '*'
// or '>', no white space), so that the subject is valid and its tail after
// the run is exactly the id; and an id may name a file or a directory,
// where it must never be "." or ".." or hold a '/'. Dots stay allowed
// inside ids because the seed plan format numbers its steps "s1.1",
// "s1.2", …; a subscriber that wants every step of a run subscribes to
// agentic.log.<run>.>, never agentic.log.<run>.*.
func ValidStepID(id string) error { return checkStepID("step id", id) }

// ValidSubgoalID reports whether id may name a subgoal: the grammar of
// ValidStepID (step and subgoal ids share one namespace).
func ValidSubgoalID(id string) error { return checkStepID("subgoal id", id) }

func checkStepID(what, id string) error {
	if err := checkLen(what, id, MaxStepIDLen); err != nil {
		return err
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !tokenByte(c) && c != '.' {
			return fmt.Errorf("%s %q has %s: use letters, digits, '_', '-' and '.'", what, id, describeByte(id, i))
		}
	}
	if id[0] == '.' || id[len(id)-1] == '.' || strings.Contains(id, "..") {
		return fmt.Errorf("%s %q: a '.' may only separate two parts (it may not start or end the id, or follow another '.')", what, id)
	}
	return nil
}

// ValidRunID reports whether id may name a run: nil, or an error that says
// what is wrong. A run id is 1 to MaxRunIDLen bytes of ASCII letters,
// digits, '_' and '-': exactly one NATS subject token, since it sits
// between other tokens in agentic.log.<run>.<step>. NewID's UUIDs pass.
func ValidRunID(id string) error {
	if err := checkLen("run id", id, MaxRunIDLen); err != nil {
		return err
	}
	for i := 0; i < len(id); i++ {
		if !tokenByte(id[i]) {
			return fmt.Errorf("run id %q has %s: use letters, digits, '_' and '-'", id, describeByte(id, i))
		}
	}
	return nil
}

// checkLen refuses an empty id and one longer than limit bytes.
func checkLen(what, id string, limit int) error {
	switch {
	case id == "":
		return fmt.Errorf("%s is empty", what)
	case len(id) > limit:
		return fmt.Errorf("%s %.20q... is %d bytes; the limit is %d", what, id, len(id), limit)
	}
	return nil
}

// tokenByte reports whether c may appear in an id part: [A-Za-z0-9_-].
func tokenByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// describeByte names the byte at i of s for a message.
func describeByte(s string, i int) string {
	switch c := s[i]; {
	case c == ' ':
		return "a space"
	case c >= 0x80:
		return fmt.Sprintf("a non-ASCII character at byte %d", i)
	case c < 0x20 || c == 0x7f:
		return fmt.Sprintf("a control character (%#02x) at byte %d", c, i)
	default:
		return fmt.Sprintf("%q at byte %d", c, i)
	}
}
