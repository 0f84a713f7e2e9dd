package artifacts

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

type folder struct {
	t   *testing.T
	f   *Fold
	seq uint64
	at  time.Time
}

func (x *folder) fold(typ event.Type, run string, data any) {
	x.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		x.t.Fatal(err)
	}
	x.seq++
	x.at = x.at.Add(time.Second)
	x.f.Fold(event.Event{Seq: x.seq, Type: typ, Run: run, Time: x.at, Data: b})
}

func sha(c byte) string { return strings.Repeat(string(c), 64) }

func (x *folder) run(id, family, status string, arts ...event.ArtifactStoredData) {
	x.fold(event.GoalSubmitted, id, event.GoalSubmittedData{Goal: "g", Family: family})
	x.fold(event.PlanProposed, id, map[string]any{"revision": 1, "source": "llm", "plan": map[string]any{}})
	x.fold(event.PlanAccepted, id, event.PlanAcceptedData{Revision: 1})
	for _, a := range arts {
		x.fold(event.ArtifactStored, id, a)
	}
	if status != "" {
		x.fold(event.RunFinished, id, event.RunFinishedData{Status: event.RunStatus(status)})
	}
}

func TestResolveAndList(t *testing.T) {
	x := &folder{t: t, f: New(), at: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)}
	rep := func(c byte, size int64) event.ArtifactStoredData {
		return event.ArtifactStoredData{Name: "report.md", Size: size, SHA256: sha(c), Object: "up/" + string(c), Step: "make", Attempt: 1, Retention: event.RetentionRun}
	}
	x.run("r1", "nightly", "succeeded", rep('a', 10))
	x.run("r2", "nightly", "failed", rep('b', 20))
	x.run("r3", "nightly", "", rep('c', 5), rep('d', 7)) // live; stored twice

	got, err := x.f.Resolve("r9", event.ArtifactInput{Family: "nightly", Name: "report.md", As: "last.md"})
	if err != nil || got.SHA256 != sha('a') || got.Run != "r1" || got.As != "last.md" || got.Size != 10 {
		t.Fatalf("family input: %+v, %v (want r1's, the latest succeeded)", got, err)
	}
	if got, err := x.f.Resolve("r3", event.ArtifactInput{Step: "make", Name: "report.md"}); err != nil || got.SHA256 != sha('d') || got.Run != "r3" {
		t.Fatalf("step input: %+v, %v (want the later store)", got, err)
	}
	if _, err := x.f.Resolve("r3", event.ArtifactInput{Step: "other", Name: "report.md"}); !errors.Is(err, ErrNoArtifact) {
		t.Fatalf("another step's name: %v", err)
	}
	if got, err := x.f.Resolve("r9", event.ArtifactInput{Run: "r2", Name: "report.md"}); err != nil || got.SHA256 != sha('b') {
		t.Fatalf("run input: %+v, %v", got, err)
	}
	if _, err := x.f.Resolve("r9", event.ArtifactInput{Family: "weekly", Name: "report.md"}); !errors.Is(err, ErrNoRun) {
		t.Fatalf("unknown family: %v", err)
	}
	if b := x.f.RunBytes("r3"); b != 7 {
		t.Fatalf("run bytes %d, want 7 (the name stored again counts once)", b)
	}
	list, more, err := x.f.List("r2", "", 10)
	if err != nil || more || len(list) != 1 || list[0].Retention != event.RetentionDebug {
		t.Fatalf("a failed run's list: %+v, %v, %v (want debug retention)", list, more, err)
	}

	// Snapshot and restore give the same answers.
	_, snap, err := x.f.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	y := New()
	if err := y.Restore(snap); err != nil {
		t.Fatal(err)
	}
	if got, err := y.Resolve("r9", event.ArtifactInput{Family: "nightly", Name: "report.md"}); err != nil || got.SHA256 != sha('a') {
		t.Fatalf("restored: %+v, %v", got, err)
	}

	// Retention: an event folded after it forgets the finished runs.
	x.at = x.at.Add(Retention + time.Hour)
	x.run("r4", "", "")
	if _, err := x.f.Resolve("r9", event.ArtifactInput{Family: "nightly", Name: "report.md"}); !errors.Is(err, ErrNoRun) {
		t.Fatalf("after the retention: %v", err)
	}
	if _, err := x.f.Resolve("r3", event.ArtifactInput{Step: "make", Name: "report.md"}); err != nil {
		t.Fatalf("a live run was forgotten: %v", err)
	}
}

func TestListPages(t *testing.T) {
	x := &folder{t: t, f: New(), at: time.Now()}
	var arts []event.ArtifactStoredData
	for _, n := range []string{"c", "a", "b", "d"} {
		arts = append(arts, event.ArtifactStoredData{Name: n, Size: 1, SHA256: sha('e'), Object: "up/x", Step: "s", Attempt: 1})
	}
	x.run("r1", "", "succeeded", arts...)
	var names []string
	after := ""
	for {
		page, more, err := x.f.List("r1", after, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range page {
			names = append(names, a.Name)
			after = a.Name
		}
		if !more {
			break
		}
	}
	if strings.Join(names, ",") != "a,b,c,d" {
		t.Fatalf("pages gave %v", names)
	}
}
