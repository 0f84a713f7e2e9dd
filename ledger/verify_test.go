package ledger_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/ledger/ledgertest"
)

// verifyFixture appends 7 records: a single event (1), a batch of three
// (2-4), a single event (5), a refused message (6), a single event (7).
func verifyFixture(t *testing.T) (*ledger.Store, *ledgertest.Kit) {
	st := ledgertest.Open(t)
	kit := ledgertest.NewKit(t)
	bad := kit.Receive(4, "agentic.ev.task.started", []byte("not.a.jws"), time.Now())
	mustAppend(t, st,
		kit.Message(1, kit.Operator, event.MustDraft(event.GoalSubmitted, "r", event.GoalSubmittedData{Goal: "g"})),
		kit.Message(2, kit.Node, started("r", 3)...),
		kit.Message(3, kit.Node, started("r", 1)...),
		bad,
		kit.Message(5, kit.Node, started("r", 1)...),
	)
	if seq, _ := st.Head(); seq != 7 {
		t.Fatalf("fixture has %d records, want 7", seq)
	}
	return st, kit
}

func rawGet(t *testing.T, st *ledger.Store, key []byte) []byte {
	t.Helper()
	v, err := ledger.RawGet(st, key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func rawSet(t *testing.T, st *ledger.Store, key, v []byte) {
	t.Helper()
	if err := ledger.RawSet(st, key, v); err != nil {
		t.Fatal(err)
	}
}

func rawDelete(t *testing.T, st *ledger.Store, key []byte) {
	t.Helper()
	if err := ledger.RawDelete(st, key); err != nil {
		t.Fatal(err)
	}
}

// rechain rewrites every hash from seq on and the head, as an attacker with
// write access would, so that only a message check can catch a change.
func rechain(t *testing.T, st *ledger.Store, from uint64) {
	t.Helper()
	var prev [32]byte
	if from > 1 {
		copy(prev[:], rawGet(t, st, ledger.HashKey(from-1)))
	}
	last, _ := st.Head()
	for seq := from; seq <= last; seq++ {
		prev = sha256.Sum256(append(prev[:], rawGet(t, st, ledger.EventKey(seq))...))
		rawSet(t, st, ledger.HashKey(seq), prev[:])
	}
	h := rawGet(t, st, []byte(ledger.HeadKey))
	copy(h[8:40], prev[:])
	rawSet(t, st, []byte(ledger.HeadKey), h)
}

func TestVerify(t *testing.T) {
	tests := []struct {
		name       string
		tamper     func(t *testing.T, st *ledger.Store)
		withoutKey uint64 // FirstBadSeq with a nil verifier (0: passes)
		withKey    uint64 // FirstBadSeq with the kit's verifier
	}{
		{name: "clean", tamper: func(*testing.T, *ledger.Store) {}},
		{
			name: "changed record byte",
			tamper: func(t *testing.T, st *ledger.Store) {
				v := rawGet(t, st, ledger.EventKey(3))
				i := bytes.Index(v, []byte(`"s1"`))
				v[i+2] = '9' // step s1 -> s9
				rawSet(t, st, ledger.EventKey(3), v)
			},
			withoutKey: 3, withKey: 3,
		},
		{
			name: "changed record with the chain rewritten",
			tamper: func(t *testing.T, st *ledger.Store) {
				var ev event.Event
				if err := json.Unmarshal(rawGet(t, st, ledger.EventKey(3)), &ev); err != nil {
					t.Fatal(err)
				}
				ev.Run = "other"
				b, _ := json.Marshal(ev)
				rawSet(t, st, ledger.EventKey(3), b)
				rechain(t, st, 3)
			},
			withoutKey: 0, withKey: 3,
		},
		{
			name: "changed raw message",
			tamper: func(t *testing.T, st *ledger.Store) {
				raw, rebuild, err := ledger.MessageRaw(2, rawGet(t, st, ledger.MessageKey(2)))
				if err != nil {
					t.Fatal(err)
				}
				raw = bytes.Clone(raw)
				raw[len(raw)/2] ^= 1 // inside the payload
				rawSet(t, st, ledger.MessageKey(2), rebuild(raw))
			},
			withoutKey: 0, withKey: 2,
		},
		{
			name: "raw message swapped for another valid one",
			tamper: func(t *testing.T, st *ledger.Store) {
				rawSet(t, st, ledger.MessageKey(3), rawGet(t, st, ledger.MessageKey(5)))
			},
			withoutKey: 0, withKey: 5,
		},
		{
			name:       "removed raw message",
			tamper:     func(t *testing.T, st *ledger.Store) { rawDelete(t, st, ledger.MessageKey(1)) },
			withoutKey: 0, withKey: 1,
		},
		{
			name:       "removed record",
			tamper:     func(t *testing.T, st *ledger.Store) { rawDelete(t, st, ledger.EventKey(4)) },
			withoutKey: 4, withKey: 4,
		},
		{
			name:       "removed last record",
			tamper:     func(t *testing.T, st *ledger.Store) { rawDelete(t, st, ledger.EventKey(7)) },
			withoutKey: 7, withKey: 7,
		},
		{
			name:       "removed hash",
			tamper:     func(t *testing.T, st *ledger.Store) { rawDelete(t, st, ledger.HashKey(5)) },
			withoutKey: 5, withKey: 5,
		},
		{
			name: "reordered pair",
			tamper: func(t *testing.T, st *ledger.Store) {
				a, b := rawGet(t, st, ledger.EventKey(2)), rawGet(t, st, ledger.EventKey(3))
				rawSet(t, st, ledger.EventKey(2), b)
				rawSet(t, st, ledger.EventKey(3), a)
			},
			withoutKey: 2, withKey: 2,
		},
		{
			name: "reordered pair with hashes",
			tamper: func(t *testing.T, st *ledger.Store) {
				for _, key := range []func(uint64) []byte{ledger.EventKey, ledger.HashKey} {
					a, b := rawGet(t, st, key(5)), rawGet(t, st, key(6))
					rawSet(t, st, key(5), b)
					rawSet(t, st, key(6), a)
				}
			},
			withoutKey: 5, withKey: 5,
		},
		{
			name: "head hash changed",
			tamper: func(t *testing.T, st *ledger.Store) {
				h := rawGet(t, st, []byte(ledger.HeadKey))
				h[20] ^= 1
				rawSet(t, st, []byte(ledger.HeadKey), h)
			},
			withoutKey: 7, withKey: 7,
		},
		{
			name: "head applied stream seq changed",
			tamper: func(t *testing.T, st *ledger.Store) {
				h := rawGet(t, st, []byte(ledger.HeadKey))
				binary.BigEndian.PutUint64(h[40:], 9)
				rawSet(t, st, []byte(ledger.HeadKey), h)
			},
			withoutKey: 7, withKey: 7,
		},
		{
			name: "record beyond head",
			tamper: func(t *testing.T, st *ledger.Store) {
				h := rawGet(t, st, []byte(ledger.HeadKey))
				binary.BigEndian.PutUint64(h, 6)
				rawSet(t, st, []byte(ledger.HeadKey), h)
			},
			withoutKey: 7, withKey: 7,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, kit := verifyFixture(t)
			_, head := st.Head()
			tc.tamper(t, st)
			for _, c := range []struct {
				label string
				kit   *ledgertest.Kit
				want  uint64
			}{{"nil verifier", nil, tc.withoutKey}, {"verifier", kit, tc.withKey}} {
				v := c.kit
				var rep ledger.VerifyReport
				var err error
				if v == nil {
					rep, err = st.Verify(nil)
				} else {
					rep, err = st.Verify(v.Verifier)
				}
				if err != nil {
					t.Fatalf("%s: Verify error %v", c.label, err)
				}
				if rep.FirstBadSeq != c.want || rep.OK != (c.want == 0) || (rep.OK && rep.Err != "") || (!rep.OK && rep.Err == "") {
					t.Errorf("%s: report %+v, want FirstBadSeq %d", c.label, rep, c.want)
					continue
				}
				switch {
				case rep.OK && tc.name == "clean" && (rep.Events != 7 || rep.Head != head):
					t.Errorf("%s: clean report %+v, want 7 events and head %x", c.label, rep, head)
				case !rep.OK && rep.Events != c.want-1 && tc.name != "head hash changed" && tc.name != "head applied stream seq changed":
					t.Errorf("%s: %d good records before %d", c.label, rep.Events, c.want)
				}
			}
		})
	}
}

// A ledger that lost a stream message without a gap record does not
// verify, even with its chain rewritten; nor does a gap record that does
// not cover its hole.
func TestVerifyFindsStreamHoles(t *testing.T) {
	st, kit := verifyFixture(t)
	var export bytes.Buffer
	if err := st.Export(&export); err != nil {
		t.Fatal(err)
	}
	if same := ledgertest.Rechain(t, export.Bytes(), nil); !bytes.Equal(same, export.Bytes()) {
		t.Fatalf("Rechain without an edit changed the export:\n%s\nwant\n%s", same, export.Bytes())
	}
	for _, tc := range []struct {
		name string
		edit func(ev *event.Event) bool
		want string
	}{
		{"message dropped", func(ev *event.Event) bool { return ev.StreamSeq != 3 }, "record 5 has stream seq 4 after 2: stream seqs 3 to 3 are missing without a gap record"},
		{"gap too short", func(ev *event.Event) bool {
			if ev.StreamSeq == 3 {
				*ev = event.Event{StreamSeq: 4, ID: "gap-3", Type: event.Gap, Subject: ev.Subject, Time: ev.Time, Data: json.RawMessage(`{"from":2,"to":3}`)}
			}
			return true
		}, "gap record 5 (stream seq 4, {\"from\":2,\"to\":3}) does not cover the hole after stream seq 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forged, err := ledger.Import(t.TempDir(), bytes.NewReader(ledgertest.Rechain(t, export.Bytes(), tc.edit)), ledger.Options{Logger: ledgertest.Logger(t)})
			if err != nil {
				t.Fatalf("import of the rechained export: %v", err)
			}
			defer forged.Close()
			for _, v := range []*ledgertest.Kit{nil, kit} {
				var rep ledger.VerifyReport
				if v == nil {
					rep, err = forged.Verify(nil)
				} else {
					rep, err = forged.Verify(v.Verifier)
				}
				if err != nil || rep.OK || rep.FirstBadSeq != 5 || rep.Err != tc.want {
					t.Errorf("verify (kit %v) = %+v, %v; want record 5: %s", v != nil, rep, err, tc.want)
				}
			}
		})
	}
}

func TestVerifyEmpty(t *testing.T) {
	st := ledgertest.Open(t)
	rep, err := st.Verify(ledgertest.NewKit(t).Verifier)
	if err != nil || !rep.OK || rep.Events != 0 || rep.Head != [32]byte{} {
		t.Errorf("Verify(empty) = %+v %v", rep, err)
	}
}
