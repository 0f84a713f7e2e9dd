package ledger

import (
	"encoding/binary"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Key prefixes. Keep them distinct and never reuse one.
const (
	prefixEvent    = "e/"
	prefixHash     = "h/"
	prefixMessage  = "m/"
	prefixRun      = "r/"
	prefixType     = "t/"
	prefixSeen     = "j/"
	prefixSnapshot = "s/"
	prefixGoalRun  = "g/"
	prefixTime     = "x/"
	// prefixCredential holds the credentials index (credentials.go).
	prefixCredential = "c/"
	keyHead          = "meta/head"
	keyFormat        = "meta/format"
	// keyImporting marks an Import that has not finished.
	keyImporting = "meta/importing"
	// keyRejects holds the rejection limiter's state, committed with the
	// head (ledger/flood.go).
	keyRejects = "meta/rejects"
)

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func seqKey(prefix string, seq uint64) []byte { return appendSeqKey(nil, prefix, seq) }

func appendSeqKey(dst []byte, prefix string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, prefix...), seq)
}

func eventKey(seq uint64) []byte      { return seqKey(prefixEvent, seq) }
func hashKey(seq uint64) []byte       { return seqKey(prefixHash, seq) }
func messageKey(stream uint64) []byte { return seqKey(prefixMessage, stream) }
func seenKey(id string) []byte        { return []byte(prefixSeen + id) }
func goalRunKey(run string) []byte    { return []byte(prefixGoalRun + run) }
func snapshotKey(name string) []byte  { return []byte(prefixSnapshot + name) }
func runPrefix(run string) []byte     { return appendRunPrefix(nil, run) }
func typePrefix(t event.Type) []byte  { return appendTypePrefix(nil, t) }

func appendRunPrefix(dst []byte, run string) []byte {
	return append(append(append(dst, prefixRun...), run...), '/')
}

func appendTypePrefix(dst []byte, t event.Type) []byte {
	return append(append(append(dst, prefixType...), t...), '/')
}

// timeKey is x/<stream time, unix ns><seq>: records by stream time, then
// position. Times before 1970 (the zero time of a record with no stored
// message) count as 0, so the big-endian keys sort by time.
func timeKey(t time.Time, seq uint64) []byte { return appendTimeKey(nil, t, seq) }

func appendTimeKey(dst []byte, t time.Time, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(appendTimePrefix(dst, t), seq)
}

// timePrefix is x/<unix ns>: the first key of the records at or after t.
func timePrefix(t time.Time) []byte { return appendTimePrefix(nil, t) }

func appendTimePrefix(dst []byte, t time.Time) []byte {
	var ns int64
	if !t.IsZero() {
		ns = max(t.UnixNano(), 0)
	}
	return binary.BigEndian.AppendUint64(append(dst, prefixTime...), uint64(ns))
}

func indexKey(p []byte, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(append([]byte(nil), p...), seq)
}

// indexSeq returns the seq of an index key under prefix p. Keys of other
// names that share the prefix (run "a" and run "a/b") have another length:
// the name's length is fixed by the key's length, so a key of exactly
// len(p)+8 bytes starting with p belongs to that name.
func indexSeq(p, key []byte) (uint64, bool) {
	if len(key) != len(p)+8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(key[len(p):]), true
}

// prefixEnd is the smallest key greater than every key with prefix p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
