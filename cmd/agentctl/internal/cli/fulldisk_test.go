package cli

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/internal/diskspace/tmpfs"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/node/nodetest"
)

// A submit that nothing acknowledges because a node's disk is full names
// the full disk, not only the deadline it ran out of; alarm ls lists the
// NOSPACE that could not be recorded.
func TestSubmitOnAFullDiskNamesTheCause(t *testing.T) {
	mnt := tmpfs.Mount(t, 64<<20)
	n := nodetest.Start(t, nodetest.Config(filepath.Join(mnt, "data")))
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	tmpfs.Fill(t, mnt, 0)
	poll.Eventually(t, 20*time.Second, "the node's disk check failing", func() bool {
		return slices.ContainsFunc(n.Checks(), func(c health.Status) bool { return !c.OK && c.Alarm == event.AlarmNoSpace })
	})
	r := h.run("goal", "submit", "say hello")
	if r.code == 0 || !strings.Contains(r.stderr, "NOSPACE") || !strings.Contains(r.stderr, "test-node") {
		t.Fatalf("submit on a full disk = %+v", r)
	}
	t.Logf("submit on a full disk: %s", r.stderr)
	r = h.run("alarm", "ls")
	if r.code != 0 || !strings.Contains(r.stdout, "NOSPACE") {
		t.Fatalf("alarm ls on a full disk = %+v", r)
	}
	t.Logf("alarm ls on a full disk:\n%s", r.stdout)
}
