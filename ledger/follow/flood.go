package follow

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/health"
	"github.com/agentic-dev/agentic/ledger"
)

// CheckRejects names the follower's REJECT_FLOOD check (node.info's
// checks, /readyz).
const CheckRejects = "rejects"

// rejectLogPerWindow is how many rejections a window of stream time logs
// at Warn; the rest of the window's go to Debug (the ledger counts them).
const rejectLogPerWindow = 20

// rejectLog keeps the node's log readable under a flood of refused
// messages. Logging is not a ledger record: unlike the ledger's rate it
// needs no agreement, but it uses the same stream-time windows.
type rejectLog struct {
	window int64
	n      int
}

// level returns the level to log a rejection at stream time t with.
func (l *rejectLog) level(t time.Time, log *slog.Logger) slog.Level {
	if w := t.UnixNano() / int64(ledger.RejectWindow); w != l.window {
		l.window, l.n = w, 0
	}
	l.n++
	switch {
	case l.n < rejectLogPerWindow:
		return slog.LevelWarn
	case l.n == rejectLogPerWindow:
		log.Warn("many messages rejected: the rest of this minute's are logged at debug level; the ledger counts them (event.rejected_summary)", "window_start", time.Unix(0, l.window*int64(ledger.RejectWindow)).UTC())
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// Checks returns the follower's health checks: "rejects", not blocking,
// which fails and raises REJECT_FLOOD while refused messages come faster
// than the ledger records them one by one — from the stream time of such a
// message until RejectWindow has passed on the node's clock (Config.Now)
// with none. A quiet stream thus clears it: the records stay a function of
// the stream, only the alarm reads the clock.
func (f *Follower) Checks() []health.Check {
	return []health.Check{{
		Name:     CheckRejects,
		Blocking: false,
		Alarm:    event.AlarmRejectFlood,
		Probe:    f.probeRejects,
	}}
}

func (f *Follower) probeRejects(context.Context) error {
	st := f.cfg.Store.RejectStats()
	if st.Dropped == 0 {
		return nil
	}
	quiet := f.cfg.Now().Sub(st.LastDropped)
	if quiet >= ledger.RejectWindow {
		return nil
	}
	codes := make([]string, 0, len(st.ByCode))
	for code, n := range st.ByCode {
		codes = append(codes, fmt.Sprintf("%s %d", code, n))
	}
	slices.Sort(codes)
	return fmt.Errorf("refused messages arrive faster than the ledger records them one by one: %d counted in summaries since start, the last at stream time %s; refused by code since start: %s",
		st.Dropped, st.LastDropped.Format(time.RFC3339), strings.Join(codes, ", "))
}

// Rejections returns the ledger's rejections since the node started: by
// code, and how many were counted without a record of their own.
func (f *Follower) Rejections() ledger.RejectStats { return f.cfg.Store.RejectStats() }
