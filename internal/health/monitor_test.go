package health

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/logrec"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
)

// recorder is an Emitter keeping what it was given; while fail is set it
// refuses, as an outbox that cannot write does.
type recorder struct {
	mu   sync.Mutex
	fail error
	got  []event.Draft
}

func (r *recorder) Emit(_ context.Context, drafts ...event.Draft) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	r.got = append(r.got, drafts...)
	return nil
}

func (r *recorder) setFail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.fail = err
}

// alarms returns the alarm events emitted, as "raised CODE" or "cleared
// CODE".
func (r *recorder) alarms(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.got {
		var a event.AlarmData
		if err := json.Unmarshal(d.Data, &a); err != nil {
			t.Fatal(err)
		}
		if a.Node != "node-a" {
			t.Errorf("alarm about %q, want node-a", a.Node)
		}
		out = append(out, strings.TrimPrefix(string(d.Type), "alarm.")+" "+string(a.Alarm))
	}
	return out
}

func newMonitor(t *testing.T, em Emitter, file string, log *slog.Logger) *Monitor {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m, err := NewMonitor(Config{Node: "node-a", Emitter: em, AlarmsFile: file, Interval: time.Hour, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func skewCheck(s *State) Check {
	return Check{Name: CheckClock, Blocking: true, Alarm: event.AlarmClockSkew, Probe: s.Probe, Changed: s.Changed}
}

func equal(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

func TestMonitorRaisesOnceAndClearsOnce(t *testing.T) {
	var rec logrec.Recorder
	em := &recorder{}
	m := newMonitor(t, em, filepath.Join(t.TempDir(), "alarms.json"), slog.New(&rec))
	var s State
	if err := m.Register(skewCheck(&s)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	m.Probe(ctx)
	if err := m.Ready(); err != nil {
		t.Fatalf("ready with a passing check: %v", err)
	}
	s.Set(errors.New("clock 40s ahead of the stream"))
	for range 3 {
		m.Probe(ctx)
	}
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW"}) {
		t.Fatalf("after three failing probes: %v, want one raise", got)
	}
	if err := m.Ready(); err == nil || err.Error() != "clock: CLOCK_SKEW: clock 40s ahead of the stream" {
		t.Fatalf("Ready = %v", err)
	}
	st := m.Statuses()
	if len(st) != 1 || st[0].OK || st[0].Alarm != event.AlarmClockSkew || st[0].Since.IsZero() {
		t.Fatalf("statuses %+v", st)
	}
	since := st[0].Since
	m.Probe(ctx)
	if st := m.Statuses(); !st[0].Since.Equal(since) {
		t.Errorf("Since moved while the check kept failing: %v, then %v", since, st[0].Since)
	}
	if !m.Alarms()[event.AlarmClockSkew] {
		t.Error("alarm not in force")
	}
	s.Set(nil)
	for range 3 {
		m.Probe(ctx)
	}
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW", "cleared CLOCK_SKEW"}) {
		t.Fatalf("after healing: %v", got)
	}
	if m.Ready() != nil || m.Alarms()[event.AlarmClockSkew] {
		t.Errorf("healed: ready %v, alarms %v", m.Ready(), m.Alarms())
	}
	// One log line per transition, not per probe.
	failing := rec.Count(func(r logrec.Record) bool { return r.Message == "health check failing" })
	passing := rec.Count(func(r logrec.Record) bool { return r.Message == "health check passing again" })
	if failing != 1 || passing != 1 {
		t.Errorf("logged %d failing and %d passing lines, want 1 and 1", failing, passing)
	}
}

func TestMonitorNonBlockingCheckLeavesReadiness(t *testing.T) {
	m := newMonitor(t, &recorder{}, "", nil)
	bad := errors.New("bad")
	err := m.Register(
		Check{Name: "soft", Probe: func(context.Context) error { return bad }},
		Check{Name: "hard", Blocking: true, Probe: func(context.Context) error { return nil }},
	)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Ready(); err == nil || err.Error() != "hard: not checked yet" {
		t.Fatalf("a blocking check not probed yet: Ready = %v", err)
	}
	m.Probe(context.Background())
	if err := m.Ready(); err != nil {
		t.Fatalf("Ready = %v with only a non-blocking check failing", err)
	}
	if st := m.Statuses(); st[0].OK || st[0].Reason != "bad" || !st[1].OK {
		t.Errorf("statuses %+v", st)
	}
	if err := m.Register(Check{Name: "hard", Probe: func(context.Context) error { return nil }}); err == nil {
		t.Error("a name registered twice was accepted")
	}
	if err := m.Register(Check{Name: "noprobe"}); err == nil {
		t.Error("a check without a probe was accepted")
	}
}

func TestMonitorAlarmsSurviveARestart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alarms.json")
	em := &recorder{}
	ctx := context.Background()
	failing := errors.New("40s ahead")

	m := newMonitor(t, em, file, nil)
	var s State
	s.Set(failing)
	if err := m.Register(skewCheck(&s)); err != nil {
		t.Fatal(err)
	}
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW"}) {
		t.Fatalf("first process: %v", got)
	}

	// A restart with the fault still there raises nothing again.
	m = newMonitor(t, em, file, nil)
	var s2 State
	s2.Set(failing)
	if err := m.Register(skewCheck(&s2)); err != nil {
		t.Fatal(err)
	}
	m.Probe(ctx)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW"}) {
		t.Fatalf("after a restart with the fault: %v, want no second raise", got)
	}
	// ... and clears it once the cause is gone.
	s2.Set(nil)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW", "cleared CLOCK_SKEW"}) {
		t.Fatalf("healed after the restart: %v", got)
	}
	// A cleared alarm stays cleared across the next restart.
	m = newMonitor(t, em, file, nil)
	if err := m.Register(skewCheck(new(State))); err != nil {
		t.Fatal(err)
	}
	m.Probe(ctx)
	if got := em.alarms(t); len(got) != 2 {
		t.Fatalf("a restart after the clear emitted again: %v", got)
	}
}

func TestMonitorClearsAnAlarmNoCheckRaisesAnyMore(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alarms.json")
	em := &recorder{}
	if err := writeAlarms(file, []event.AlarmData{{Node: "node-a", Alarm: event.AlarmNoSpace, Check: CheckDisk, Reason: "2 MB free"}}); err != nil {
		t.Fatal(err)
	}
	m := newMonitor(t, em, file, nil)
	if err := m.Register(skewCheck(new(State))); err != nil {
		t.Fatal(err)
	}
	m.Probe(context.Background())
	if got := em.alarms(t); !equal(got, []string{"cleared NOSPACE"}) {
		t.Fatalf("an alarm raised before a restart whose check is gone: %v, want it cleared", got)
	}
	left, err := readAlarms(file)
	if err != nil || len(left) != 0 {
		t.Fatalf("alarms file after the clear: %v, %v", left, err)
	}
}

func TestMonitorRetriesAPendingEmit(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alarms.json")
	var rec logrec.Recorder
	em := &recorder{}
	em.setFail(errors.New("outbox: no space left on device"))
	m := newMonitor(t, em, file, slog.New(&rec))
	var s State
	s.Set(errors.New("40s ahead"))
	if err := m.Register(skewCheck(&s)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 3 {
		m.Probe(ctx)
	}
	if got := em.alarms(t); len(got) != 0 {
		t.Fatalf("emitted while the emitter fails: %v", got)
	}
	if !m.Alarms()[event.AlarmClockSkew] {
		t.Error("a pending alarm is not in force")
	}
	if left, _ := readAlarms(file); len(left) != 0 {
		t.Errorf("an alarm not emitted was recorded as raised: %v", left)
	}
	if n := rec.Count(func(r logrec.Record) bool { return strings.HasPrefix(r.Message, "alarm not recorded yet") }); n != 1 {
		t.Errorf("emit failure logged %d times, want once", n)
	}
	em.setFail(nil)
	m.Probe(ctx)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised CLOCK_SKEW"}) {
		t.Fatalf("once the emitter works: %v", got)
	}
	if left, err := readAlarms(file); err != nil || len(left) != 1 || left[0].Alarm != event.AlarmClockSkew || left[0].Reason != "40s ahead" {
		t.Errorf("alarms file: %+v, %v", left, err)
	}
}

func TestMonitorProbesAtOnceWhenAStateChanges(t *testing.T) {
	em := &recorder{}
	m := newMonitor(t, em, "", nil) // Interval: an hour
	var s State
	if err := m.Register(skewCheck(&s)); err != nil {
		t.Fatal(err)
	}
	m.Start(context.Background())
	defer m.Stop()
	if err := m.Ready(); err != nil {
		t.Fatalf("Start probes once: Ready = %v", err)
	}
	s.Set(errors.New("40s ahead"))
	poll.Eventually(t, 10*time.Second, "the failure seen without waiting for the interval", func() bool { return m.Ready() != nil })
	s.Set(nil)
	poll.Eventually(t, 10*time.Second, "the heal seen", func() bool { return m.Ready() == nil })
	poll.Eventually(t, 10*time.Second, "raise and clear emitted", func() bool {
		return equal(em.alarms(t), []string{"raised CLOCK_SKEW", "cleared CLOCK_SKEW"})
	})
	// A fault healed before any probe is still reported (State), once.
	var other State
	if err := m.Register(Check{Name: CheckConsumer, Alarm: event.AlarmConsumerMissing, Probe: other.Probe, Changed: other.Changed}); err != nil {
		t.Fatal(err)
	}
	poll.Eventually(t, 10*time.Second, "the late check probed", func() bool { return m.Statuses()[1].Reason != notChecked })
	other.Set(errors.New("consumer deleted"))
	other.Set(nil)
	poll.Eventually(t, 10*time.Second, "the healed fault raised and cleared", func() bool {
		return equal(em.alarms(t), []string{"raised CLOCK_SKEW", "cleared CLOCK_SKEW", "raised CONSUMER_MISSING", "cleared CONSUMER_MISSING"})
	})
}

func TestMonitorRefusesABadAlarmsFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "alarms.json")
	if err := os.WriteFile(file, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := NewMonitor(Config{Node: "node-a", Emitter: &recorder{}, AlarmsFile: file})
	if err == nil || !strings.Contains(err.Error(), "does not decode") {
		t.Fatalf("NewMonitor with a damaged alarms file: %v", err)
	}
	if _, err := NewMonitor(Config{Node: "node-a"}); err == nil {
		t.Error("a monitor without an emitter was made")
	}
}

// Two checks carrying one alarm: it is raised once when the first fails,
// and cleared once only when both pass.
func TestMonitorAlarmSharedByTwoChecks(t *testing.T) {
	em := &recorder{}
	m := newMonitor(t, em, "", nil)
	var disk, outbox State
	err := m.Register(
		Check{Name: CheckDisk, Alarm: event.AlarmNoSpace, Probe: disk.Probe},
		Check{Name: CheckOutbox, Alarm: event.AlarmNoSpace, Probe: outbox.Probe},
	)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	outbox.Set(errors.New("outbox: no space left on device"))
	m.Probe(ctx)
	disk.Set(errors.New("2 MB free"))
	m.Probe(ctx)
	outbox.Set(nil)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised NOSPACE"}) {
		t.Fatalf("while one of two checks fails: %v", got)
	}
	disk.Set(nil)
	m.Probe(ctx)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised NOSPACE", "cleared NOSPACE"}) {
		t.Fatalf("once both pass: %v", got)
	}
	em.mu.Lock()
	var raised event.AlarmData
	_ = json.Unmarshal(em.got[0].Data, &raised)
	em.mu.Unlock()
	if raised.Check != CheckOutbox || raised.Reason != "outbox: no space left on device" || raised.Since.IsZero() {
		t.Errorf("raised %+v", raised)
	}
}

// clearedReasons returns the Reason of every alarm.cleared emitted.
func (r *recorder) clearedReasons(t *testing.T) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.got {
		var a event.AlarmData
		if err := json.Unmarshal(d.Data, &a); err != nil {
			t.Fatal(err)
		}
		if d.Type == event.AlarmCleared {
			out = append(out, a.Reason)
		}
	}
	return out
}

// An alarm whose check a component mended (State.Clear) clears with the
// component's reason; one whose cause went away, with "cause gone".
func TestMonitorClearsWithTheReasonGiven(t *testing.T) {
	em := &recorder{}
	m := newMonitor(t, em, "", nil)
	var s State
	c := Check{Name: "stream_drift", Alarm: event.AlarmStreamDrift, Probe: s.Probe, Changed: s.Changed, Cleared: s.ClearReason}
	if err := m.Register(c); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	s.Set(errors.New("max_msgs is 100"))
	m.Probe(ctx)
	s.Clear("restored")
	m.Probe(ctx)
	s.Set(errors.New("max_age is 1h"))
	m.Probe(ctx)
	s.Set(nil)
	m.Probe(ctx)
	if got := em.alarms(t); !equal(got, []string{"raised STREAM_DRIFT", "cleared STREAM_DRIFT", "raised STREAM_DRIFT", "cleared STREAM_DRIFT"}) {
		t.Fatalf("alarms %v", got)
	}
	if got, want := em.clearedReasons(t), []string{"restored: max_msgs is 100", "cause gone: max_age is 1h"}; !equal(got, want) {
		t.Fatalf("cleared with reasons %q, want %q", got, want)
	}
}
