package settings_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/settings"
)

func TestParseBytes(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1500000000": 1500000000, "2GiB": 2 << 30, "2gib": 2 << 30, "512MiB": 512 << 20, "512M": 512 << 20,
		"1.5GiB": 3 << 29, "500MB": 500e6, "2GB": 2e9, "1TiB": 1 << 40, "64 MiB": 64 << 20, "100B": 100, " 4G ": 4 << 30,
	}
	for in, want := range good {
		if got, err := settings.ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"": "not a byte count", "GiB": "not a byte count", "-1": "cannot be negative", "-2GiB": "cannot be negative",
		"two": "not a byte count", "1.5": "not a byte count", "2XB": "not a byte count", "9999999999TiB": "too large",
		"NaNGiB": "not a byte count", "1e300GiB": "too large",
	}
	for in, want := range bad {
		if _, err := settings.ParseBytes(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseBytes(%q) error %v, want one saying %q", in, err, want)
		}
	}
}

func TestFormat(t *testing.T) {
	for in, want := range map[int64]string{0: "0", 4 << 30: "4GiB", 1536 << 20: "1536MiB", 1000: "1000B", 1 << 40: "1TiB", 3 << 10: "3KiB"} {
		if got := settings.FormatBytes(in); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", in, got, want)
		}
		if back, err := settings.ParseBytes(settings.FormatBytes(in)); err != nil || back != in {
			t.Errorf("FormatBytes(%d) does not parse back: %d %v", in, back, err)
		}
	}
	for in, want := range map[time.Duration]string{720 * time.Hour: "720h", 90 * time.Minute: "1h30m", 0: "0s", 90 * time.Second: "1m30s", time.Hour + time.Second: "1h0m1s"} {
		if got := settings.FormatAge(in); got != want {
			t.Errorf("FormatAge(%s) = %q, want %q", in, got, want)
		}
		if back, err := settings.ParseAge(want); err != nil || back != in {
			t.Errorf("FormatAge(%s) does not parse back: %s %v", in, back, err)
		}
	}
}

func TestFromDataReportsEveryProblem(t *testing.T) {
	d := event.ClusterSettingsData{Revision: 3, Streams: event.ClusterStreamsData{
		Events: event.StreamSettingsData{MaxAge: "soon", MaxBytes: -5, Replicas: 0},
		Logs:   event.StreamSettingsData{MaxAge: "10m", MaxBytes: 1 << 20, Replicas: 9},
	}}
	_, err := settings.FromData(d)
	if err == nil {
		t.Fatal("FromData accepted bad settings")
	}
	// The unparsable age is reported first; the rest once it parses.
	if !strings.Contains(err.Error(), `events max age: "soon" is not a duration`) {
		t.Errorf("error %q", err)
	}
	d.Streams.Events.MaxAge = "-1h"
	_, err = settings.FromData(d)
	for _, want := range []string{
		"events max age -1h: want 0s (no limit) or at least 1h",
		"events max bytes -5: want 0 (no limit) or at least 64MiB",
		"events replicas 0: want 1 to 5",
		"logs max age 10m: want 0s (no limit) or at least 1h",
		"logs max bytes 1048576",
		"logs replicas 9",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	// The defaults round-trip through the payload.
	def := settings.Default()
	if got, err := settings.FromData(def.Data()); err != nil || got != def {
		t.Errorf("defaults round trip: %+v %v", got, err)
	}
	if def.Events != bus.DefaultEventsSettings || def.Logs != bus.DefaultLogsSettings || def.Revision != 0 {
		t.Errorf("Default() = %+v", def)
	}
}

// ledger numbers events the way a ledger would.
type ledger struct{ seq uint64 }

func (l *ledger) event(t event.Type, v any) event.Event {
	d := event.MustDraft(t, "", v)
	l.seq++
	return event.Event{Seq: l.seq, StreamSeq: l.seq, ID: d.ID, Type: t, Node: "alice", Time: d.Time, Subject: d.Subject(), Data: d.Data}
}

func revision(rev uint64, eventsAge string) event.ClusterSettingsData {
	d := settings.Default().Data()
	d.Revision = rev
	d.Streams.Events.MaxAge = eventsAge
	return d
}

func TestFoldTakesOnlyValidNewerSettings(t *testing.T) {
	var l ledger
	c := settings.New(settings.Config{})
	c.Fold(l.event(event.GoalSubmitted, event.GoalSubmittedData{Goal: "g"}))
	if got := c.InForce(); got.Recorded || got.Revision != 0 || got.Streams.Events.MaxAge != "720h" {
		t.Fatalf("before any settings: %+v", got)
	}
	r1 := l.event(event.ClusterSettings, revision(1, "48h"))
	c.Fold(r1)
	c.Fold(l.event(event.ClusterSettings, revision(1, "96h")))          // same revision: ignored
	c.Fold(l.event(event.ClusterSettings, revision(5, "1m")))           // invalid: ignored
	c.Fold(l.event(event.ClusterSettings, "not an object"))             // undecodable: ignored
	c.Fold(l.event(event.ClusterSettings, event.ClusterSettingsData{})) // empty: ignored
	got := c.InForce()
	if !got.Recorded || got.Revision != 1 || got.Event != r1.ID || got.Seq != r1.Seq || got.By != "alice" || got.Streams.Events.MaxAge != "48h" {
		t.Fatalf("in force: %+v, want revision 1 from %s", got, r1.ID)
	}
	if s := c.Settings(); s.Events.MaxAge != 48*time.Hour {
		t.Fatalf("settings %+v", s)
	}
	r3 := l.event(event.ClusterSettings, revision(3, "0s"))
	c.Fold(r3)
	if got := c.InForce(); got.Revision != 3 || got.Event != r3.ID || got.Streams.Events.MaxAge != "0s" {
		t.Fatalf("in force after revision 3: %+v", got)
	}
}

func TestSnapshotRoundTrip(t *testing.T) {
	var l ledger
	c := settings.New(settings.Config{})
	seq, empty, err := c.Snapshot()
	if err != nil || seq != 0 {
		t.Fatal(seq, err)
	}
	r := settings.New(settings.Config{})
	if err := r.Restore(empty); err != nil || r.InForce().Recorded {
		t.Fatalf("restore of the empty snapshot: %v %+v", err, r.InForce())
	}

	c.Fold(l.event(event.ClusterSettings, revision(2, "100h")))
	c.Fold(l.event(event.GoalSubmitted, event.GoalSubmittedData{Goal: "g"}))
	seq, data, err := c.Snapshot()
	if err != nil || seq != 2 {
		t.Fatalf("snapshot at %d: %v", seq, err)
	}
	if err := r.Restore(data); err != nil {
		t.Fatal(err)
	}
	want, got := c.InForce(), r.InForce()
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(got)
	if !bytes.Equal(wj, gj) {
		t.Fatalf("restored %s\nwant %s", gj, wj)
	}
	// Folding the rest after a restore continues from the snapshot.
	next := l.event(event.ClusterSettings, revision(3, "200h"))
	c.Fold(next)
	r.Fold(next)
	_, a, _ := c.Snapshot()
	_, b, _ := r.Snapshot()
	if !bytes.Equal(a, b) {
		t.Fatalf("after the rest:\n%s\n%s", b, a)
	}
}

func TestRestoreRefusesBadSnapshots(t *testing.T) {
	good := settings.Default().Data()
	good.Revision = 2
	gj, _ := json.Marshal(good)
	bad := settings.Default().Data()
	bad.Revision = 2
	bad.Streams.Logs.Replicas = 0
	bj, _ := json.Marshal(bad)
	tests := []struct {
		name    string
		in      string
		wantErr error
	}{
		{"future version", `{"version":2,"seq":1}`, settings.ErrSnapshotVersion},
		{"no version", `{"seq":1}`, settings.ErrSnapshotVersion},
		{"garbage", "\x00\xffnot json", nil},
		{"empty", "", nil},
		{"invalid settings", `{"version":1,"seq":4,"settings":` + string(bj) + `,"event":"e"}`, nil},
		{"settings without event", `{"version":1,"seq":4,"settings":` + string(gj) + `}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l ledger
			c := settings.New(settings.Config{})
			c.Fold(l.event(event.ClusterSettings, revision(1, "48h")))
			_, before, _ := c.Snapshot()
			err := c.Restore([]byte(tt.in))
			if err == nil {
				t.Fatalf("Restore(%q) succeeded", tt.in)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if _, after, _ := c.Snapshot(); !bytes.Equal(after, before) {
				t.Fatalf("state changed by a refused restore:\n%s\nwas\n%s", after, before)
			}
		})
	}
}
