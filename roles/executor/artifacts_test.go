package executor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/nats-io/nats.go/jetstream"
)

// stored returns the artifact.stored payloads emitted, and the position
// of each step's first one and of its task.finished among the drafts.
func (r *recorder) stored() ([]event.ArtifactStoredData, map[string]int, map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []event.ArtifactStoredData
	first, finished := map[string]int{}, map[string]int{}
	for i, d := range r.drafts {
		ev := event.Event{Type: d.Type, Data: d.Data}
		switch d.Type {
		case event.ArtifactStored:
			var a event.ArtifactStoredData
			if ev.Decode(&a) == nil {
				out = append(out, a)
				if _, ok := first[a.Step]; !ok {
					first[a.Step] = i
				}
			}
		case event.TaskFinished:
			var f event.TaskFinishedData
			if ev.Decode(&f) == nil {
				finished[f.Step] = i
			}
		}
	}
	return out, first, finished
}

// assignArtifacts publishes a task.assigned of a shell step in its own
// directory under the harness's work dir.
func (h *harness) assignArtifacts(step, script string, outputs []string, inputs []event.ResolvedInput, stored int64) string {
	h.t.Helper()
	dir := filepath.Join(h.work, step)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	d := event.MustDraft(event.TaskAssigned, "run-1", event.TaskAssignedData{
		Decision: event.Decision{Epoch: 1}, Attempt: 1, Node: "exec-1",
		Step:   event.Step{ID: step, Kind: event.KindShell, Run: script, Cwd: step, Outputs: outputs},
		Inputs: inputs, ArtifactBytes: stored,
	})
	d.Target = "exec-1"
	h.publish(d)
	return dir
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

// TestStepOutputsStored: a succeeded step's outputs — a name and a glob —
// are stored whole and recorded before its task.finished; a failed
// step's are not.
func TestStepOutputsStored(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, nil)
	h.elect(1)
	h.assignArtifacts("make", `echo '# report' > report.md; mkdir dist; head -c 300000 /dev/zero > dist/app.tar.gz; echo x > dist/app.zip`,
		[]string{"report.md", "dist/*.tar.gz"}, nil, 0)
	h.assignArtifacts("broken", `echo r > report.md; exit 2`, []string{"report.md"}, nil, 0)
	if err := poll.Wait(20*time.Second, func() bool { return len(rec.finished("make")) == 1 && len(rec.finished("broken")) == 1 }); err != nil {
		t.Fatal("the steps did not finish")
	}
	if f := rec.finished("make")[0]; f.Status != event.TaskSucceeded {
		t.Fatalf("make: %+v", f)
	}
	arts, first, finished := rec.stored()
	want := map[string][]byte{"report.md": []byte("# report\n"), "dist/app.tar.gz": make([]byte, 300000)}
	if len(arts) != len(want) {
		t.Fatalf("stored %+v, want %d artifacts", arts, len(want))
	}
	st, err := artifact.Open(context.Background(), h.js)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range arts {
		w, ok := want[a.Name]
		if !ok || a.SHA256 != hexSum(w) || a.Size != int64(len(w)) || a.Step != "make" || a.Attempt != 1 || a.Retention != event.RetentionRun {
			t.Errorf("stored %+v", a)
			continue
		}
		var b bytes.Buffer
		if _, err := st.Get(context.Background(), a.SHA256, a.Size, a.Object, &b); err != nil || !bytes.Equal(b.Bytes(), w) {
			t.Errorf("get %s: %v", a.Name, err)
		}
	}
	if first["make"] > finished["make"] {
		t.Error("artifacts recorded after the step's task.finished")
	}
}

// TestStepOutputsRefused: an output through a symbolic link, one that
// leaves the working directory (an assignment no plan check saw), one
// that matches nothing and one beyond the run's cap fail the step with
// the reason, and record nothing of the refused file.
func TestStepOutputsRefused(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, nil)
	h.elect(1)
	outside := filepath.Join(filepath.Dir(h.work), "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		script string
		glob   string
		stored int64
		want   string
	}{
		"link":    {"ln -s /etc/hostname host.txt", "host.txt", 0, "symbolic link"},
		"linkdir": {"ln -s " + outside + " out", "out/*.txt", 0, "symbolic link"},
		"escape":  {"true", "../outside/secret.txt", 0, "leaves the step's working directory"},
		"none":    {"true", "*.md", 0, "matched no file"},
		"cap":     {"head -c 2048 /dev/zero > big.bin", "big.bin", 4<<30 - 1000, "budgets.run_artifact_bytes"},
	}
	for step, c := range cases {
		h.assignArtifacts(step, c.script, []string{c.glob}, nil, c.stored)
	}
	if err := poll.Wait(30*time.Second, func() bool {
		for step := range cases {
			if len(rec.finished(step)) != 1 {
				return false
			}
		}
		return true
	}); err != nil {
		t.Fatal("the steps did not finish")
	}
	for step, c := range cases {
		f := rec.finished(step)[0]
		if f.Status != event.TaskFailed || f.Class != event.ClassLogic || !strings.Contains(f.Error, c.want) {
			t.Errorf("%s: %s/%s %q, want a logic failure saying %q", step, f.Status, f.Class, f.Error, c.want)
		}
	}
	if arts, _, _ := rec.stored(); len(arts) != 0 {
		t.Errorf("refused outputs were recorded: %+v", arts)
	}
}

// TestStepOutputsRunCapConcurrent: two steps of one run storing at the
// same time, each within what the run has left but not both, store
// exactly the bytes the cap allows: one is recorded, the other fails
// with the reason, naming the cap.
func TestStepOutputsRunCapConcurrent(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, nil)
	h.elect(1)
	const left = 3000 // of the default cap, 4 GiB
	// Both wait for each other's file before finishing, so that their
	// stores overlap.
	for _, step := range []string{"a", "b"} {
		h.assignArtifacts(step, `head -c 2000 /dev/urandom > out.bin; touch ../`+step+`.ready; `+
			`while [ ! -e ../a.ready ] || [ ! -e ../b.ready ]; do sleep 0.01; done`,
			[]string{"out.bin"}, nil, 4<<30-left)
	}
	if err := poll.Wait(30*time.Second, func() bool { return len(rec.finished("a")) == 1 && len(rec.finished("b")) == 1 }); err != nil {
		t.Fatal("the steps did not finish")
	}
	arts, _, _ := rec.stored()
	var total int64
	for _, a := range arts {
		total += a.Size
	}
	if len(arts) != 1 || total > left {
		t.Errorf("recorded %d artifacts, %d bytes, of a run with %d bytes left: %+v", len(arts), total, left, arts)
	}
	failed := 0
	for _, step := range []string{"a", "b"} {
		f := rec.finished(step)[0]
		if f.Status == event.TaskSucceeded {
			continue
		}
		failed++
		if f.Class != event.ClassLogic || !strings.Contains(f.Error, "budgets.run_artifact_bytes") {
			t.Errorf("%s: %s/%s %q, want a logic failure naming budgets.run_artifact_bytes", step, f.Status, f.Class, f.Error)
		}
	}
	if failed != 1 {
		t.Errorf("%d steps failed, want 1", failed)
	}
}

// TestStepInputs: an input is written, verified, into the working
// directory before the step runs; a tampered one fails the step, which
// does not run, with the reason.
func TestStepInputs(t *testing.T) {
	h := newHarness(t)
	rec := &recorder{}
	h.start("exec-1", t.TempDir(), rec, nil)
	h.elect(1)
	ctx := context.Background()
	st, err := artifact.Open(ctx, h.js)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat([]byte("input "), 50000)
	good, err := st.Put(ctx, "out.bin", bytes.NewReader(data), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := st.Put(ctx, "out.bin", bytes.NewReader(data[:1000]), artifact.PutOptions{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := h.js.ObjectStore(ctx, artifact.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.Put(ctx, jetstream.ObjectMeta{Name: bad.Object}, strings.NewReader("tampered bytes")); err != nil {
		t.Fatal(err)
	}
	in := func(i artifact.Info, as string) []event.ResolvedInput {
		return []event.ResolvedInput{{As: as, Run: "run-0", Name: i.Name, SHA256: i.SHA256, Size: i.Size, Object: i.Object}}
	}
	okDir := h.assignArtifacts("use", "sha256sum in/out.bin > sum.txt", nil, in(good, "in/out.bin"), 0)
	badDir := h.assignArtifacts("usebad", "touch ran", nil, in(bad, "out.bin"), 0)
	if err := poll.Wait(20*time.Second, func() bool { return len(rec.finished("use")) == 1 && len(rec.finished("usebad")) == 1 }); err != nil {
		t.Fatal("the steps did not finish")
	}
	if f := rec.finished("use")[0]; f.Status != event.TaskSucceeded {
		t.Fatalf("use: %+v", f)
	}
	if b, _ := os.ReadFile(filepath.Join(okDir, "sum.txt")); !strings.HasPrefix(string(b), good.SHA256) {
		t.Errorf("the step read %q, want the input's sha256 %s", b, good.SHA256)
	}
	f := rec.finished("usebad")[0]
	if f.Status != event.TaskFailed || f.Class != event.ClassLogic || !strings.Contains(f.Error, "does not match its recorded sha256") {
		t.Errorf("a tampered input: %s/%s %q", f.Status, f.Class, f.Error)
	}
	if rec.started("usebad") {
		t.Error("the step of a tampered input started")
	}
	for _, n := range []string{"ran", "out.bin", ".out.bin.part"} {
		if _, err := os.Stat(filepath.Join(badDir, n)); err == nil {
			t.Errorf("a tampered input left %s", n)
		}
	}
}
