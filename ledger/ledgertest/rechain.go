package ledgertest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// exportLine mirrors one line of ledger.Store.Export (docs/cli.md, "ledger
// export"): the record's event fields, its chain hash, and on the first
// record of a stream message the message itself.
type exportLine struct {
	event.Event
	Hash    string    `json:"hash"`
	JWS     string    `json:"jws,omitempty"`
	MsgID   string    `json:"msg_id,omitempty"`
	MsgTime time.Time `json:"msg_time,omitzero"`
}

// Rechain rewrites an export (the JSON Lines of ledger.Store.Export): edit
// sees each record in order and may change it, or return false to drop it;
// the records kept are then numbered from 1 again and their chain hashes
// recomputed. The result imports (ledger.Import checks the chain, not what
// was signed): it is how a test makes a forged ledger that only Verify with
// a verifier, or its stream-coverage check, can tell from a true one.
func Rechain(t testing.TB, export []byte, edit func(ev *event.Event) bool) []byte {
	t.Helper()
	var out bytes.Buffer
	var prev [32]byte
	var seq uint64
	sc := bufio.NewScanner(bytes.NewReader(export))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("ledgertest: rechain: line %d: %v", seq+1, err)
		}
		if edit != nil && !edit(&l.Event) {
			continue
		}
		seq++
		l.Seq = seq
		rec, err := json.Marshal(l.Event)
		if err != nil {
			t.Fatalf("ledgertest: rechain: record %d: %v", seq, err)
		}
		prev = sha256.Sum256(append(prev[:], rec...))
		l.Hash = hex.EncodeToString(prev[:])
		line, err := json.Marshal(l)
		if err != nil {
			t.Fatalf("ledgertest: rechain: record %d: %v", seq, err)
		}
		out.Write(append(line, '\n'))
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("ledgertest: rechain: %v", err)
	}
	return out.Bytes()
}
