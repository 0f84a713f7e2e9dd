package web_test

import (
	"encoding/json"
	"testing"
	"time"
)

// tlFrame is what a run stream's frame says of the timeline.
type tlFrame struct {
	Now int64 `json:"now"`
	TL  map[string]struct {
		S string `json:"s"`
		N string `json:"n"`
		B int64  `json:"b"`
		E int64  `json:"e"`
		A int    `json:"a"`
	} `json:"tl"`
}

// The run page's stream carries the timeline too: the first frame every
// started attempt (start, end, node), later ones only the rows that
// changed — an attempt that started, one that finished.
func TestRunStreamSendsTimeline(t *testing.T) {
	l := newLedger()
	smallRun(l)
	srv := newServer(t, l)
	ch, stop := stream(t, srv.URL+"/runs/"+runID+"/live?rev=1", "")
	defer stop()
	var f tlFrame
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	d := f.TL["diagnose"]
	if len(f.TL) != 3 || d.S != "running" || d.E != 0 || d.N != "n1" || d.B != t0.Add(7*time.Second).UnixMilli() || f.Now == 0 {
		t.Fatalf("first frame's timeline: %+v", f)
	}
	if e := f.TL["fetch"].E; e != t0.Add(3*time.Second).UnixMilli() {
		t.Fatalf("fetch ends at %d", e)
	}
	l.change(func() {
		for i, st := range l.steps[runID] {
			switch st.ID {
			case "diagnose":
				l.steps[runID][i].Status, l.steps[runID][i].FinishedAt = "succeeded", ptime(9*time.Second)
			case "report":
				l.steps[runID][i].Status, l.steps[runID][i].Node, l.steps[runID][i].Attempt, l.steps[runID][i].StartedAt = "running", "n2", 1, ptime(9*time.Second)
			}
		}
	})
	f = tlFrame{}
	if err := json.Unmarshal([]byte(next(t, ch, "state").data), &f); err != nil {
		t.Fatal(err)
	}
	if len(f.TL) != 2 || f.TL["diagnose"].E != t0.Add(9*time.Second).UnixMilli() || f.TL["report"].S != "running" || f.TL["report"].N != "n2" {
		t.Fatalf("second frame's timeline: %+v, want diagnose finished and report started", f.TL)
	}
}
