package cli

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/bustest/poll"
	"github.com/agentic-dev/agentic/bus/trust"
	"github.com/agentic-dev/agentic/node/nodetest"
	"github.com/agentic-dev/agentic/node/settings"
)

// On a small store the streams are made with less than the settings ask;
// cluster settings show says so, stream by stream, instead of showing the
// settings' limits as if they were the streams'.
func TestClusterSettingsShowStreamsLoweredByTheDisk(t *testing.T) {
	cfg := nodetest.Config(t.TempDir())
	cfg.Disk.JetStreamMaxStore = "64MiB"
	n := nodetest.Start(t, cfg)
	h := &harness{t: t, url: n.NATSURL(), creds: filepath.Join(n.Dir, trust.OperatorCredsFile)}
	if logs := streamCfg(t, n, bus.LogsStream); logs.MaxBytes != 16<<20 {
		t.Fatalf("logs stream made with %d bytes on a 64 MiB store", logs.MaxBytes)
	}
	var r result
	poll.Eventually(t, 20*time.Second, "the node compared the streams", func() bool {
		r = h.run("cluster", "settings", "show")
		return r.code == 0 && !strings.Contains(r.stdout, "has not compared")
	})
	if !regexp.MustCompile(`(?m)^AGENTIC_LOGS\s+168h\s+16 ?MiB \(settings: 1 ?GiB; lowered to fit the JetStream store\)`).MatchString(r.stdout) ||
		strings.Contains(r.stdout, "they match\n") {
		t.Fatalf("cluster settings show on a small store =\n%s%s", r.stdout, r.stderr)
	}
	r = h.run("cluster", "settings", "show", "-o", "json")
	in := decodeJSON[settings.InForce](t, r.stdout)
	found := false
	for _, s := range in.Sized {
		found = found || (s.Stream == bus.LogsStream && s.Asked == 1<<30 && s.Created == 16<<20)
	}
	if !found {
		t.Fatalf("json sized = %+v", in.Sized)
	}
}
