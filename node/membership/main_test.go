package membership

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/node/membership/membershiptest"
)

func TestMain(m *testing.M) { membershiptest.VerifyTestMain(m) }

// testLogger discards memberlist's log unless MEMBERSHIP_LOG is set (it
// goes on after a test's end while memberlist winds down, where t.Log
// would panic).
func testLogger() *slog.Logger {
	if os.Getenv("MEMBERSHIP_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

var incarnations atomic.Int64

// newIncarnation is a fresh incarnation id, as a node gets at each start.
func newIncarnation(name string) string {
	return fmt.Sprintf("%s-%d", name, incarnations.Add(1))
}

// testConfig is a member on a free loopback port with the fast preset.
func testConfig(name string, join ...string) Config {
	return Config{
		Meta: Meta{Node: name, Incarnation: newIncarnation(name), Roles: []string{"executor"},
			Capabilities: []string{"docker"}, Slots: 4, Version: "test"},
		Bind:   "127.0.0.1:0",
		Join:   join,
		Preset: PresetFast,
		Logger: testLogger(),
		// Tests join at once and again quickly.
		RejoinEvery: 50 * time.Millisecond,
	}
}

// start runs a member for the test; it is stopped (without leaving) at
// the test's end.
func start(t testing.TB, cfg Config) *Membership {
	t.Helper()
	m, err := Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("start %s: %v", cfg.Meta.Node, err)
	}
	t.Cleanup(m.Stop)
	return m
}

// member returns name as m sees it.
func member(m *Membership, name string) (Member, bool) {
	for _, mem := range m.Members() {
		if mem.Node == name {
			return mem, true
		}
	}
	return Member{}, false
}

// stateOf is name's state as m sees it ("" when m does not know it).
func stateOf(m *Membership, name string) State {
	mem, _ := member(m, name)
	return mem.State
}
