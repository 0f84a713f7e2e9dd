package memory_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/memory"
	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// historyGen draws a ledger history: puts with and without TTL, written
// facts with absolute expiries (some in another zone), task results that
// count or do not, undecodable payloads and events memory ignores. Signer
// clocks are not monotonic, so event times go back as well as forth.
func historyGen() *rapid.Generator[[]event.Event] {
	return rapid.Custom(func(t *rapid.T) []event.Event {
		n := rapid.IntRange(0, 60).Draw(t, "n")
		out := make([]event.Event, 0, n)
		for i := range n {
			at := t0.Add(time.Duration(rapid.IntRange(-30, 120).Draw(t, "at")) * time.Minute)
			scope := rapid.SampledFrom([]string{"", memory.ScopeShared, "run-1", "run-2", "not a run"}).Draw(t, "scope")
			key := rapid.SampledFrom([]string{"a", "b", "c", ""}).Draw(t, "key")
			var typ event.Type
			var v any
			switch rapid.IntRange(0, 13).Draw(t, "kind") {
			case 0, 1:
				ttl := rapid.SampledFrom([]time.Duration{0, time.Minute, time.Hour}).Draw(t, "ttl")
				typ, v = event.MemoryPut, event.MemoryPutData{Scope: scope, Key: key, Value: fmt.Sprint("v", i), TTL: event.Duration(ttl)}
			case 2:
				exp := rapid.SampledFrom([]time.Time{{}, t0.Add(time.Hour), t0.Add(90 * time.Minute).In(time.FixedZone("", 2*3600))}).Draw(t, "expires")
				typ, v = event.MemoryWritten, event.MemoryWrittenData{Scope: scope, Key: key, Value: fmt.Sprint("w", i), Expires: exp}
			case 3, 4:
				st := rapid.SampledFrom([]event.TaskStatus{event.TaskSucceeded, event.TaskFailed, event.TaskSkipped}).Draw(t, "status")
				hash := rapid.SampledFrom([]string{"h1", "h2", ""}).Draw(t, "hash")
				typ, v = event.TaskFinished, event.TaskFinishedData{Step: "s", Status: st, CommandHash: hash}
			case 5:
				typ, v = rapid.SampledFrom([]event.Type{event.MemoryPut, event.MemoryWritten, event.TaskFinished, event.MemoryRecorded, event.MemoryPruned}).Draw(t, "bad"), "not an object"
			case 6:
				typ, v = event.GoalSubmitted, event.GoalSubmittedData{Goal: "g", Family: rapid.SampledFrom([]string{"", "nightly"}).Draw(t, "family")}
			case 7:
				st := rapid.SampledFrom([]event.TaskStatus{event.TaskSucceeded, event.TaskFailed}).Draw(t, "status")
				sc := rapid.SampledFrom([]string{"", event.FactScopeShared, event.FactScopeFamily, "bogus"}).Draw(t, "fscope")
				ttl := rapid.SampledFrom([]time.Duration{0, time.Minute}).Draw(t, "fttl")
				typ, v = event.MemoryRecorded, event.MemoryRecordedData{Scope: sc, Key: key, Value: fmt.Sprint("nginx reload ", i),
					Tags: []string{"infra"}, TTL: event.Duration(ttl), Step: "s", Attempt: 1, Status: st}
			case 8:
				typ = rapid.SampledFrom([]event.Type{event.MemoryReleased, event.MemoryDropped}).Draw(t, "qtype")
				v = event.MemoryQuarantineData{Scope: scope, Key: key, Seq: uint64(rapid.IntRange(0, 3).Draw(t, "qseq"))}
			case 9:
				typ, v = event.MemoryPruned, event.MemoryPrunedData{Before: at}
			case 10:
				typ, v = event.PlanProposed, event.PlanProposedData{Revision: 1, Source: rapid.SampledFrom([]string{"file", "llm"}).Draw(t, "source"),
					Plan: event.Plan{Family: rapid.SampledFrom([]string{"", "weekly"}).Draw(t, "pfamily")}}
			case 11:
				typ, v = event.PlanAccepted, event.PlanAcceptedData{Revision: 1}
			case 12:
				typ, v = event.TaskAssigned, event.TaskAssignedData{Step: event.Step{ID: "s", Kind: event.KindShell, Run: "make",
					Releases: []string{"run/a", "shared/b", "family/c"}}, Approved: rapid.SampledFrom([]string{"", "sha256:x"}).Draw(t, "approved")}
			default:
				typ, v = event.GateDecided, event.GateDecidedData{Step: "s", Action: event.GateAccept}
			}
			e := ev(typ, at, v)
			e.Run = rapid.SampledFrom([]string{"run-1", "run-2", ""}).Draw(t, "run")
			if typ == event.MemoryPut || typ == event.MemoryWritten {
				e.Run = ""
			}
			e.Seq = uint64(i + 1)
			out = append(out, e)
		}
		return out
	})
}

func foldAll(m *memory.Memory, events []event.Event) *memory.Memory {
	for _, e := range events {
		m.Fold(e)
	}
	return m
}

type fataler interface {
	Helper()
	Fatal(...any)
}

func snap(t fataler, m *memory.Memory) (uint64, []byte) {
	t.Helper()
	seq, b, err := m.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	return seq, b
}

// reads renders what readers see at several clocks, before, among and
// after the events' times: every Get, List and Stats answer.
func reads(m *memory.Memory) []string {
	var out []string
	for _, off := range []time.Duration{-time.Hour, 0, 30 * time.Minute, 61 * time.Minute, 100 * time.Minute, 3 * time.Hour} {
		now := t0.Add(off)
		for _, scope := range []string{"", "run-1", "run-2", "nope", "family:nightly", "family:weekly"} {
			for _, f := range m.List(scope, now) {
				out = append(out, fmt.Sprintf("list %s %s: %s", scope, now, show(f)))
			}
			for _, key := range []string{"a", "b", "c"} {
				f, err := m.Get(scope, key, now)
				out = append(out, fmt.Sprintf("get %s/%s %s: %s %v", scope, key, now, show(f), err))
			}
		}
	}
	for _, q := range []string{"nginx", "reload 3", "v1 w2"} {
		for _, qu := range []bool{false, true} {
			r := m.Search(q, t0.Add(30*time.Minute), memory.SearchOptions{Quarantined: qu, Limit: 5})
			out = append(out, fmt.Sprintf("search %q %v: total %d next %d", q, qu, r.Total, r.Next))
			for _, h := range r.Hits {
				out = append(out, fmt.Sprintf("  %.6f %s", h.Score, show(h.Fact)))
			}
		}
	}
	for _, opts := range []memory.ListOptions{{Quarantined: true}, {Tag: "infra", Limit: 2}, {Prefix: "a"}} {
		p := m.Page(opts, t0.Add(30*time.Minute))
		out = append(out, fmt.Sprintf("page %+v: next %q", opts, p.Next))
		for _, f := range p.Facts {
			out = append(out, "  "+show(f))
		}
	}
	for _, h := range []string{"h1", "h2", ""} {
		out = append(out, fmt.Sprintf("stats %s: %+v", h, m.Stats(h)))
	}
	return out
}

func show(f memory.Fact) string {
	return fmt.Sprintf("%s/%s=%s updated %s expires %s tags %v refs %+v quarantined %v %q released %q", f.Scope, f.Key, f.Value,
		f.UpdatedAt.Format(time.RFC3339Nano), f.ExpiresAt.Format(time.RFC3339Nano), f.Tags, f.Refs, f.Quarantined, f.Reason, f.Released)
}

// TestPropertySnapshotPlusRestEqualsFoldFromZero: for any history and any
// cut, restoring a snapshot taken at the cut and folding the rest gives the
// state, the ledger position and every read of a fold from zero.
func TestPropertySnapshotPlusRestEqualsFoldFromZero(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		events := historyGen().Draw(rt, "events")
		k := rapid.IntRange(0, len(events)).Draw(rt, "cut")

		full := foldAll(memory.New(), events)
		wantSeq, want := snap(rt, full)

		cutSeq, mid := snap(rt, foldAll(memory.New(), events[:k]))
		if k > 0 && cutSeq != events[k-1].Seq {
			rt.Fatalf("snapshot at cut %d reflects seq %d, want %d", k, cutSeq, events[k-1].Seq)
		}
		restored := memory.New()
		if err := restored.Restore(mid); err != nil {
			rt.Fatalf("restore: %v", err)
		}
		foldAll(restored, events[k:])
		gotSeq, got := snap(rt, restored)
		if gotSeq != wantSeq || !bytes.Equal(got, want) {
			rt.Fatalf("cut %d of %d: snapshot then the rest differs from folding from zero:\n got %d %s\nwant %d %s",
				k, len(events), gotSeq, got, wantSeq, want)
		}
		if g, w := reads(restored), reads(full); !slices.Equal(g, w) {
			rt.Fatalf("cut %d: reads differ:\n got %q\nwant %q", k, g, w)
		}
	})
}

// TestSnapshotKeepsExpiredFacts: a fact expired by the last event's time is
// still in the snapshot, because a reader whose clock is behind sees it.
func TestSnapshotKeepsExpiredFacts(t *testing.T) {
	m := memory.New()
	put := ev(event.MemoryPut, t0, event.MemoryPutData{Key: "k", Value: "v", TTL: event.Duration(time.Minute)})
	put.Seq = 1
	later := ev(event.GoalSubmitted, t0.Add(time.Hour), event.GoalSubmittedData{Goal: "g"})
	later.Seq = 2
	foldAll(m, []event.Event{put, later})
	seq, data := snap(t, m)
	r := memory.New()
	if err := r.Restore(data); err != nil {
		t.Fatal(err)
	}
	if f, err := r.Get("", "k", t0.Add(30*time.Second)); seq != 2 || err != nil || f.Value != "v" {
		t.Fatalf("restored fact at a clock before its expiry: %+v %v (seq %d)", f, err, seq)
	}
}

// TestRestoreRefusesBadSnapshots: unknown versions, garbage and
// inconsistent snapshots are refused, and the state stays as it was.
func TestRestoreRefusesBadSnapshots(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"future version", `{"version":4,"seq":1,"facts":[],"stats":{}}`, memory.ErrSnapshotVersion},
		{"version 2, without provenance", `{"version":2,"seq":1,"facts":[],"stats":{}}`, memory.ErrSnapshotVersion},
		{"bad run", `{"version":3,"facts":[],"stats":{},"runs":{"":{}}}`, nil},
		{"version 1, without shapes", `{"version":1,"seq":1,"facts":[],"stats":{}}`, memory.ErrSnapshotVersion},
		{"bad shape", `{"version":3,"facts":[],"stats":{},"shapes":{"make":{"failures":-2}}}`, nil},
		{"bad attempt", `{"version":3,"facts":[],"stats":{},"attempts":[{"run":"r","step":"","attempt":1,"shapes":["make"]}]}`, nil},
		{"no version", `{"seq":1,"facts":[],"stats":{}}`, memory.ErrSnapshotVersion},
		{"garbage", "\x00\xffnot json", nil},
		{"empty", "", nil},
		{"wrong shape", `{"version":3,"facts":{"a":1}}`, nil},
		{"fact without key", `{"version":3,"facts":[{"scope":"shared","value":"v"}]}`, nil},
		{"fact without scope", `{"version":3,"facts":[{"key":"k","value":"v"}]}`, nil},
		{"fact with a bad scope", `{"version":3,"facts":[{"scope":"not a run","key":"k","value":"v"}]}`, memory.ErrBadScope},
		{"fact twice", `{"version":3,"facts":[{"scope":"shared","key":"k"},{"scope":"shared","key":"k"}]}`, nil},
		{"negative count", `{"version":3,"facts":[],"stats":{"h":{"successes":-1}}}`, nil},
		{"bad time", `{"version":3,"facts":[{"scope":"shared","key":"k","updated_at":"yesterday"}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := memory.New()
			e := ev(event.MemoryPut, t0, event.MemoryPutData{Key: "kept", Value: "v"})
			e.Seq = 7
			m.Fold(e)
			beforeSeq, before := snap(t, m)
			err := m.Restore([]byte(tt.in))
			if err == nil {
				t.Fatalf("Restore(%q) succeeded", tt.in)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if seq, after := snap(t, m); seq != beforeSeq || !bytes.Equal(after, before) {
				t.Fatalf("state changed by a refused restore:\n%s\nwas\n%s", after, before)
			}
		})
	}
}
