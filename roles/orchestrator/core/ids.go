package core

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/google/uuid"
)

// decisionSpace is the UUID namespace of decision ids (a constant drawn
// once; changing it changes every decision id).
var decisionSpace = uuid.MustParse("d6f3a321-34a9-4a9c-a424-b1fceb216082")

// DecisionID is the event id of the decision with key k made by the leader
// of epoch: a UUIDv8 (RFC 9562) whose free bits are the first bits of
// SHA-256(decisionSpace ‖ epoch ‖ k), so that it is a valid event id like
// the others (UUIDv7) and Decide stays a pure function of its inputs.
//
// Ids are unique per epoch: a new leader re-making a decision gives it a
// new id, and fencing and the fold (which applies a key once) keep it from
// applying twice. Within one epoch there is one leader, and it re-makes a
// key only if emitting it failed (the outbox did not take it); the retry
// then carries the same id, so if an earlier attempt reached the stream
// after all, ledgers keep one of the two and refuse the other (a repeated
// id), and the loop's in-flight mark is cleared by whichever is folded.
// A key whose event was folded is never decided again in that epoch: every
// key names a one-way step (revisions and attempts only grow, a run
// finishes once), which the fold has applied or, for a decision the state
// had overtaken, never will.
func DecisionID(epoch uint64, k DecisionKey) string {
	b := make([]byte, 0, 64+len(k.Run)+len(k.Step)+len(k.Node)+len(k.Incarnation))
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = appendField(b, string(k.Kind))
	b = appendField(b, k.Run)
	b = appendField(b, k.Step)
	b = binary.BigEndian.AppendUint64(b, uint64(k.Attempt))
	b = binary.BigEndian.AppendUint64(b, uint64(k.Revision))
	b = appendField(b, k.Node)
	if k.Incarnation != "" { // absent from the keys made before it, whose ids stay
		b = appendField(b, k.Incarnation)
	}
	if k.Policy != 0 { // likewise
		b = binary.BigEndian.AppendUint64(append(b, 'p'), uint64(k.Policy))
	}
	return uuid.NewHash(sha256.New(), decisionSpace, b, 8).String()
}

// appendField appends s with its length, so that no two keys encode alike.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
