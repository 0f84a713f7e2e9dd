package runindex

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/apiwire"
	"github.com/agentic-dev/agentic/ledger"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// model computes the entries the index must hold after recs from the final
// state of every run (not incrementally): a summary, id key and status key
// per run, a row per step, a gate key per step held at a gate, a rating
// key per run.rated.
func model(recs []ledger.IndexRecord) map[string]string {
	s := core.NewState()
	s.TrackChanges()
	created := map[string]int64{}
	runs := map[string]*core.Run{}
	out := map[string]string{}
	for _, rec := range recs {
		if ev := rec.Event; ev.Type == event.RunRated {
			var d event.RunRatedData
			if err := ev.Decode(&d); err != nil {
				panic(err)
			}
			out[string(ratingKey(ev.Run, ev.Seq))] = mustJSON(apiwire.RunRating{Rating: d.Rating, Reason: d.Reason, Operator: ev.Node, At: ev.Time.UTC(), Seq: ev.Seq})
		}
		s.Apply(rec.Event)
		for _, c := range s.TakeChanges().Runs {
			if _, ok := created[c.Run.ID]; !ok {
				created[c.Run.ID] = createdNanos(rec.StreamTime)
			}
			runs[c.Run.ID] = c.Run
		}
	}
	for id, r := range runs {
		pos := position(created[id], id)
		sum := r.Summary()
		sum.CreatedAt = timeOf(created[id])
		out[string(createdKey(pos))] = mustJSON(sum)
		out[string(idKey(id))] = string(binary.BigEndian.AppendUint64(nil, uint64(created[id])))
		out[string(statusKey(string(r.Status), pos))] = ""
		for i, st := range r.Steps {
			out[string(stepKey(id, i))] = mustJSON(r.StepView(i))
			if st.Gate != nil {
				out[string(gateKey(pos, i))] = mustJSON(gateView(r, i))
			}
		}
		if r.Gate != nil {
			out[string(gateKey(pos, planGatePos))] = mustJSON(planGateView(r))
		}
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// entries reads the whole index.
func entries(t tb, st *ledger.Store) map[string]string {
	t.Helper()
	out := map[string]string{}
	for e, err := range st.IndexScan(Name, nil, nil, false) {
		if err != nil {
			t.Fatal(err)
		}
		out[string(e.Key)] = string(e.Value)
	}
	return out
}

// diff describes how two entry sets differ (first few keys).
func diff(got, want map[string]string) string {
	var out []string
	for k, v := range want {
		if g, ok := got[k]; !ok {
			out = append(out, "missing "+quote(k)+" = "+v)
		} else if g != v {
			out = append(out, "at "+quote(k)+":\n   got "+g+"\n  want "+v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			out = append(out, "extra "+quote(k)+" = "+v)
		}
	}
	if len(out) > 6 {
		out = out[:6]
	}
	s := ""
	for _, l := range out {
		s += "\n  " + l
	}
	return s
}

func quote(k string) string { return string(mustJSON(k)) }

// attach attaches a fresh index to st.
func attach(t tb, st *ledger.Store) *Index {
	t.Helper()
	x := New(nil)
	if err := x.Attach(st); err != nil {
		t.Fatalf("attach: %v", err)
	}
	return x
}

// appendAll appends msgs in one Append.
func appendAll(t tb, st *ledger.Store, msgs []ledger.Message) {
	t.Helper()
	if len(msgs) == 0 {
		return
	}
	if _, err := st.Append(msgs); err != nil {
		t.Fatalf("append: %v", err)
	}
}

// listAll drains a listing.
func listAll(t *testing.T, x *Index, q Query) []Entry {
	t.Helper()
	var out []Entry
	for e, err := range x.Runs(q) {
		if err != nil {
			t.Fatalf("Runs(%+v): %v", q, err)
		}
		out = append(out, e)
	}
	return out
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		if e.Summary == nil {
			out = append(out, "<checkpoint>")
			continue
		}
		out = append(out, e.Summary.ID)
	}
	return out
}

func isErr(err, target error) bool { return errors.Is(err, target) }
