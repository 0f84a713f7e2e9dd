package diskspace

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
)

func TestParseFloor(t *testing.T) {
	for in, want := range map[string]Floor{
		"": {}, "256MiB": {Bytes: 256 << 20}, "1GiB": {Bytes: 1 << 30}, "64MB": {Bytes: 64e6},
		"1048576": {Bytes: 1 << 20}, "5%": {Percent: 5}, " 0.5 % ": {Percent: 0.5},
	} {
		got, err := ParseFloor(in)
		if err != nil || got != want {
			t.Errorf("ParseFloor(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"0", "-1MiB", "lots", "0%", "100%", "12QB", "99999999999TiB"} {
		if _, err := ParseFloor(in); err == nil {
			t.Errorf("ParseFloor(%q) accepted", in)
		}
	}
}

func TestFloorFor(t *testing.T) {
	if got := (Floor{}).For(64 << 20); got != 3355443 {
		t.Errorf("default floor of 64 MiB = %d, want 5%%", got)
	}
	if got := (Floor{}).For(1 << 40); got != DefaultFloorBytes {
		t.Errorf("default floor of 1 TiB = %d, want %d", got, DefaultFloorBytes)
	}
	if got := (Floor{Percent: 10}).For(1000); got != 100 {
		t.Errorf("10%% of 1000 = %d", got)
	}
	if got := (Floor{Bytes: 7}).For(1000); got != 7 {
		t.Errorf("7 bytes = %d", got)
	}
}

// A tmpfs filled below the floor makes the monitor fail its check with the
// reason, and freeing it passes again, without anything else being done.
func TestMonitorTmpfs(t *testing.T) {
	dir := tmpfs.Mount(t, 16<<20)
	m, err := New(Config{Dir: dir, Floor: Floor{Bytes: 4 << 20}, Interval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	t.Cleanup(m.Stop)
	if err := m.Err(); err != nil {
		t.Fatalf("empty tmpfs: %v", err)
	}
	check := m.Checks()[0]
	if check.Name != "disk" || !check.Blocking || check.Alarm != "NOSPACE" {
		t.Fatalf("check = %+v", check)
	}
	changed := check.Changed()
	tmpfs.Fill(t, dir, 1<<20)
	poll.Eventually(t, 5*time.Second, "the monitor to see the fill", func() bool { return m.Err() != nil })
	<-changed
	var low *LowError
	if err := m.Err(); !errors.As(err, &low) || !strings.Contains(err.Error(), "data dir "+dir+" has") || !strings.Contains(err.Error(), "below the floor of 4 MiB") {
		t.Fatalf("err = %v", err)
	}
	if err := check.Probe(context.Background()); err == nil {
		t.Fatal("probe passes below the floor")
	}
	waited := make(chan error, 1)
	go func() { waited <- m.Wait(context.Background()) }()
	if err := os.Remove(filepath.Join(dir, tmpfs.FillName)); err != nil {
		t.Fatal(err)
	}
	if err := <-waited; err != nil {
		t.Fatal(err)
	}
	// health.State reports a failure once more after it cleared.
	poll.Eventually(t, time.Second, "the probe to pass after freeing", func() bool {
		return check.Probe(context.Background()) == nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := m.Wait(ctx); err != nil {
		t.Fatalf("Wait above the floor: %v", err)
	}
}

func TestNewMissingDir(t *testing.T) {
	if _, err := New(Config{Dir: filepath.Join(t.TempDir(), "nope")}); err == nil {
		t.Fatal("no error for a missing dir")
	}
}
