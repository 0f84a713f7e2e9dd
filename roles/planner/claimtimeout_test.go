package planner

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles"
)

// claimSetting is a cluster setting that a test changes.
type claimSetting struct{ d atomic.Int64 }

func (c *claimSetting) ClaimTimeout() time.Duration { return time.Duration(c.d.Load()) }

// TestClaimTimeoutIsTheClusterSetting: the claim timeout in force (the
// cluster setting) wins over Config.ClaimTimeout, which applies while the
// setting gives none.
func TestClaimTimeoutIsTheClusterSetting(t *testing.T) {
	setting := &claimSetting{}
	p := New(roles.Env{Node: "plain"}, Config{ClaimTimeout: time.Hour, Settings: setting})
	if got := p.claimTimeout(); got != time.Hour {
		t.Fatalf("without a setting: %v, want Config.ClaimTimeout", got)
	}
	setting.d.Store(int64(100 * time.Millisecond))
	if got := p.claimTimeout(); got != 100*time.Millisecond {
		t.Fatalf("with the setting: %v", got)
	}

	b := &bus{}
	q := b.planner(t, "plain", Config{ClaimTimeout: time.Hour, Settings: setting})
	b.submit("r", event.GoalSubmittedData{Text: "hi"})
	q.Settled(true)
	poll.Eventually(t, 10*time.Second, "the rejection", func() bool { return len(b.of(event.PlanRejected)) == 1 })
	var d event.PlanRejectedData
	if err := b.of(event.PlanRejected)[0].Decode(&d); err != nil || d.Code != event.NoPlanner || !strings.Contains(d.Error, "within 100ms") {
		t.Fatalf("rejection %+v (%v)", d, err)
	}
}
