package improve

import (
	"context"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// Severity is how urgently people hear of a proposal's news.
type Severity string

// Severities: critical is sent at once, high hourly, the others in a
// daily digest.
const (
	SeverityCritical Severity = "critical"
	SeverityHigh     Severity = "high"
	SeverityMedium   Severity = "medium"
	SeverityLow      Severity = "low"
)

// SeverityOf maps a proposal to its severity: a policy change is high
// (critical when its risk is), notes and templates low, step defaults
// and repository changes medium, a revert at least high.
func SeverityOf(p *Proposal) Severity {
	var s Severity
	switch p.Change.Kind {
	case event.ChangePolicy:
		s = SeverityHigh
		if p.Risk == "critical" {
			s = SeverityCritical
		}
	case event.ChangeStepDefaults, event.ChangeRepository:
		s = SeverityMedium
	default:
		s = SeverityLow
	}
	if p.Status == StatusReverted && s != SeverityCritical {
		s = SeverityHigh
	}
	return s
}

// Item is one piece of news about a proposal.
type Item struct {
	Proposal string    `json:"proposal"`
	Status   Status    `json:"status"`
	Pattern  string    `json:"pattern"`
	Subject  string    `json:"subject"`
	Risk     string    `json:"risk"`
	Severity Severity  `json:"severity"`
	Summary  string    `json:"summary"`
	At       time.Time `json:"at"`
	// Show is the command to look at it with.
	Show string `json:"show"`
}

// Periods of the digest.
const (
	HourlyPeriod = time.Hour
	DailyPeriod  = 24 * time.Hour
)

// Digest batches news by severity: critical items go out at once, high
// ones at most hourly, the others in a daily digest. Its clock is
// injected (Now), and Flush is called by its owner whenever it likes
// (the leader's loop, a test): it sends what is due at Now.
type Digest struct {
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Send delivers a batch; an error keeps the batch for the next Flush.
	Send func(ctx context.Context, severity Severity, items []Item) error

	mu      sync.Mutex
	pending map[Severity][]Item
	last    map[Severity]time.Time
}

func (d *Digest) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

// Add queues an item (critical ones are due at once).
func (d *Digest) Add(it Item) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pending == nil {
		d.pending, d.last = map[Severity][]Item{}, map[Severity]time.Time{}
	}
	sev := bucket(it.Severity)
	if len(d.pending[sev]) == 0 && d.last[sev].IsZero() {
		// The first batch of a severity waits a whole period from its
		// first item, not from the epoch.
		d.last[sev] = d.now()
	}
	d.pending[sev] = append(d.pending[sev], it)
}

// bucket puts medium with low: both go in the daily digest.
func bucket(s Severity) Severity {
	if s == SeverityMedium {
		return SeverityLow
	}
	return s
}

// period is how often a severity's batch goes out.
func period(s Severity) time.Duration {
	switch s {
	case SeverityCritical:
		return 0
	case SeverityHigh:
		return HourlyPeriod
	}
	return DailyPeriod
}

// Flush sends every batch that is due; it returns the first send error.
func (d *Digest) Flush(ctx context.Context) error {
	now := d.now()
	var first error
	for _, sev := range []Severity{SeverityCritical, SeverityHigh, SeverityLow} {
		d.mu.Lock()
		items := d.pending[sev]
		due := len(items) > 0 && !now.Before(d.last[sev].Add(period(sev)))
		if due {
			d.pending[sev] = nil
		}
		d.mu.Unlock()
		if !due || d.Send == nil {
			continue
		}
		if err := d.Send(ctx, sev, items); err != nil {
			d.mu.Lock()
			d.pending[sev] = append(items, d.pending[sev]...)
			d.mu.Unlock()
			if first == nil {
				first = err
			}
			continue
		}
		d.mu.Lock()
		d.last[sev] = now
		d.mu.Unlock()
	}
	return first
}

// Pending counts the queued items.
func (d *Digest) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, items := range d.pending {
		n += len(items)
	}
	return n
}
