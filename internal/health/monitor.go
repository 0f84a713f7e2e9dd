package health

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// DefaultInterval is how often a Monitor probes every check.
const DefaultInterval = time.Second

// DefaultProbeTimeout bounds one probe.
const DefaultProbeTimeout = 2 * time.Second

// notChecked is the reason of a check registered but not probed yet.
const notChecked = "not checked yet"

// Emitter durably queues events for publishing (the node's outbox; the
// shape of roles.Emitter).
type Emitter interface {
	Emit(ctx context.Context, drafts ...event.Draft) error
}

// Config configures a Monitor.
type Config struct {
	// Node is the node's name, the Node of the alarms it raises.
	Node string
	// Emitter takes the alarm.raised and alarm.cleared events. Required.
	Emitter Emitter
	// AlarmsFile is where the alarms the node has raised are kept across
	// restarts (written atomically); "" keeps them in memory only.
	AlarmsFile string
	// Interval is how often every check is probed (DefaultInterval if 0).
	Interval time.Duration
	// ProbeTimeout bounds each probe (DefaultProbeTimeout if 0).
	ProbeTimeout time.Duration
	// Logger logs transitions: a check failing (warn; info when it fails
	// from its first probe) or passing again (info), an alarm raised
	// (warn) or cleared (info).
	Logger *slog.Logger
}

// Monitor runs a node's checks: every Interval, and at once when a
// check's Changed fires. It keeps each check's Status, answers Ready, and
// raises an alarm (alarm.raised through the Emitter) once when a check
// carrying it fails, and clears it (alarm.cleared) once when every check
// carrying it passes. The alarms raised are kept in AlarmsFile, so that a
// restart neither raises them again nor forgets to clear them. An alarm
// that cannot be emitted (the outbox cannot write) stays pending and is
// tried again at every probe.
type Monitor struct {
	cfg  Config
	log  *slog.Logger
	wake chan struct{}

	mu     sync.Mutex
	checks []Check
	status map[string]*Status
	alarms map[event.Alarm]*alarmState
	// unsaved: the alarms raised changed since AlarmsFile was written;
	// saveErr is the last failure to write it, logged once.
	unsaved bool
	saveErr string
	running bool
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	// ctx is the running monitor's context (for watchers of checks
	// registered after Start).
	ctx context.Context
	// round serializes rounds (the loop's and Probe's).
	round sync.Mutex
}

// alarmState is one alarm code as the monitor knows it.
type alarmState struct {
	// want: a check carrying the alarm fails (check, reason, since say
	// which, why and from when).
	want   bool
	check  string
	reason string
	since  time.Time
	// raised: the ledger was told (the alarm.raised is in the outbox) and
	// not told it cleared since; kept in AlarmsFile.
	raised bool
	// cleared is why the check that failed passes again, when its
	// component says (Check.Cleared): the alarm.cleared's reason.
	cleared string
	// emitErr is the last failure to emit, logged once.
	emitErr string
}

// NewMonitor returns a monitor with no checks. It reads the alarms raised
// before from cfg.AlarmsFile; a file that does not decode is an error.
func NewMonitor(cfg Config) (*Monitor, error) {
	if cfg.Emitter == nil {
		return nil, errors.New("health: monitor without an emitter")
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.ProbeTimeout <= 0 {
		cfg.ProbeTimeout = DefaultProbeTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	m := &Monitor{cfg: cfg, log: cfg.Logger, wake: make(chan struct{}, 1), status: map[string]*Status{}, alarms: map[event.Alarm]*alarmState{}}
	raised, err := readAlarms(cfg.AlarmsFile)
	if err != nil {
		return nil, err
	}
	for _, a := range raised {
		m.alarms[a.Alarm] = &alarmState{raised: true, check: a.Check, reason: a.Reason, since: a.Since}
	}
	return m, nil
}

// Register adds checks. A name registered twice is an error (nothing is
// added). Checks may be registered before or after Start.
func (m *Monitor) Register(checks ...Check) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i, c := range checks {
		if c.Name == "" || c.Probe == nil {
			return fmt.Errorf("health: check %q without a name or a probe", c.Name)
		}
		if m.status[c.Name] != nil || slices.ContainsFunc(checks[:i], func(o Check) bool { return o.Name == c.Name }) {
			return fmt.Errorf("health: check %q registered twice", c.Name)
		}
	}
	for _, c := range checks {
		m.checks = append(m.checks, c)
		m.status[c.Name] = &Status{Name: c.Name, Blocking: c.Blocking, Reason: notChecked}
		if m.running {
			m.watch(m.ctx, c)
		}
	}
	if m.running {
		m.poke()
	}
	return nil
}

// Start probes every check once, then goes on in the background until
// Stop.
func (m *Monitor) Start(ctx context.Context) {
	m.mu.Lock()
	if m.running {
		m.mu.Unlock()
		return
	}
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m.ctx, m.cancel, m.running = lctx, cancel, true
	for _, c := range m.checks {
		m.watch(lctx, c)
	}
	m.mu.Unlock()
	m.Probe(lctx)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.loop(lctx)
	}()
}

// Stop ends the monitor's goroutines and waits for them.
func (m *Monitor) Stop() {
	m.mu.Lock()
	if !m.running {
		m.mu.Unlock()
		return
	}
	m.running = false
	m.cancel()
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *Monitor) loop(ctx context.Context) {
	t := time.NewTicker(m.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-m.wake:
		}
		m.Probe(ctx)
	}
}

// watch follows c.Changed (m.mu held): each time it fires, the monitor
// probes at once. The channel is taken before the probe that follows (so
// a change after that probe closes the next one). A Changed that hands
// back the channel that already fired can say nothing more, and is no
// longer watched.
func (m *Monitor) watch(ctx context.Context, c Check) {
	if c.Changed == nil {
		return
	}
	ch := c.Changed()
	if ch == nil {
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
			}
			last := ch
			ch = c.Changed()
			m.poke()
			if ch == nil || ch == last {
				return
			}
		}
	}()
}

func (m *Monitor) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Probe runs every check once, now, and raises or clears alarms as the
// results say. The background loop calls it; tests may too.
func (m *Monitor) Probe(ctx context.Context) {
	m.round.Lock()
	defer m.round.Unlock()
	m.mu.Lock()
	checks := slices.Clone(m.checks)
	m.mu.Unlock()
	results := make([]error, len(checks))
	cleared := make([]string, len(checks))
	for i, c := range checks {
		cleared[i], results[i] = m.probe(ctx, c)
	}
	if ctx.Err() != nil {
		return // stopping: a probe cut short says nothing
	}
	now := time.Now()
	m.mu.Lock()
	for i, c := range checks {
		m.record(c, results[i], now)
	}
	m.wantAlarms(checks, results, cleared)
	m.mu.Unlock()
	m.reconcile(ctx)
}

// probe runs one check's Probe under the probe timeout and, if it passes,
// asks why (Check.Cleared); a panic is a failure of the check, not of the
// node.
func (m *Monitor) probe(ctx context.Context, c Check) (cleared string, err error) {
	pctx, cancel := context.WithTimeout(ctx, m.cfg.ProbeTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			cleared, err = "", fmt.Errorf("check panicked: %v", r)
		}
	}()
	if err := c.Probe(pctx); err != nil {
		return "", err
	}
	if c.Cleared != nil {
		cleared = c.Cleared()
	}
	return cleared, nil
}

// record stores a check's result (m.mu held) and logs a transition once.
func (m *Monitor) record(c Check, err error, now time.Time) {
	s := m.status[c.Name]
	ok, reason := err == nil, ""
	if err != nil {
		reason = err.Error()
	}
	first := s.Since.IsZero()
	if first || s.OK != ok {
		switch {
		case !ok && first:
			// Usual while a node starts (its ledger catching up, no
			// leader yet): not a warning.
			m.log.Info("health check not passing yet", "check", c.Name, "reason", reason, "blocking", c.Blocking)
		case !ok:
			m.log.Warn("health check failing", "check", c.Name, "reason", reason, "blocking", c.Blocking)
		case !first:
			m.log.Info("health check passing again", "check", c.Name, "failed_for", now.Sub(s.Since).Round(time.Millisecond))
		}
		s.Since = now
	}
	s.OK, s.Reason, s.Alarm = ok, reason, ""
	if !ok {
		s.Alarm = c.Alarm
	}
}

// wantAlarms derives which alarms should be in force from the results
// (m.mu held): an alarm is wanted while any check carrying it fails, and
// is told as the first such check (in the order registered) says. An
// alarm no longer wanted is cleared with the reason its check gave for
// passing again (cleared), if any.
func (m *Monitor) wantAlarms(checks []Check, results []error, cleared []string) {
	claimed := map[event.Alarm]bool{}
	failing := map[event.Alarm]int{} // code → index of the first failing check
	for i, c := range checks {
		if c.Alarm == "" {
			continue
		}
		claimed[c.Alarm] = true
		if m.alarms[c.Alarm] == nil {
			m.alarms[c.Alarm] = &alarmState{}
		}
		if _, seen := failing[c.Alarm]; !seen && results[i] != nil {
			failing[c.Alarm] = i
		}
	}
	for code, a := range m.alarms {
		i, fails := failing[code]
		if fails {
			if !a.want && !a.raised {
				a.since = m.status[checks[i].Name].Since // a new fault
			}
			a.check, a.reason, a.cleared = checks[i].Name, results[i].Error(), ""
		} else if a.want || a.raised {
			if i := slices.IndexFunc(checks, func(c Check) bool { return c.Name == a.check }); i >= 0 && cleared[i] != "" {
				a.cleared = cleared[i]
			}
		}
		a.want = fails
		if !claimed[code] && !a.raised {
			delete(m.alarms, code) // nothing raises it any more
		}
	}
}

// reconcile emits what the ledger must be told: an alarm wanted and not
// raised, or raised and no longer wanted. A failed emit stays pending for
// the next round.
func (m *Monitor) reconcile(ctx context.Context) {
	m.mu.Lock()
	codes := make([]event.Alarm, 0, len(m.alarms))
	for code, a := range m.alarms {
		if a.want != a.raised {
			codes = append(codes, code)
		}
	}
	m.mu.Unlock()
	slices.Sort(codes)
	for _, code := range codes {
		m.mu.Lock()
		a := m.alarms[code]
		if a == nil || a.want == a.raised {
			m.mu.Unlock()
			continue
		}
		raise := a.want
		why := "cause gone"
		if a.cleared != "" {
			why = a.cleared
		}
		typ, data := event.AlarmCleared, event.AlarmData{Node: m.cfg.Node, Alarm: code, Check: a.check, Since: a.since, Reason: why + ": " + a.reason}
		if raise {
			typ, data.Reason = event.AlarmRaised, a.reason
		}
		m.mu.Unlock()
		err := m.emit(ctx, typ, data)
		m.mu.Lock()
		if err != nil {
			if msg := err.Error(); msg != a.emitErr {
				a.emitErr = msg
				m.log.Warn("alarm not recorded yet: emit failed; retried at the next check", "alarm", code, "raise", raise, "err", err)
			}
			m.mu.Unlock()
			continue
		}
		a.emitErr, a.raised = "", raise
		if !raise && !a.want {
			a.check, a.reason, a.since, a.cleared = "", "", time.Time{}, ""
		}
		m.mu.Unlock()
		m.unsaved = true
		if raise {
			m.log.Warn("alarm raised", "alarm", code, "check", data.Check, "reason", data.Reason)
		} else {
			m.log.Info("alarm cleared", "alarm", code, "check", data.Check, "reason", data.Reason)
		}
	}
	m.save()
}

// save writes the alarms raised to AlarmsFile if they changed since the
// last write; a failure is logged once and tried again at the next round.
func (m *Monitor) save() {
	m.mu.Lock()
	unsaved := m.unsaved
	m.mu.Unlock()
	if !unsaved {
		return
	}
	err := m.persist()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		m.unsaved, m.saveErr = false, ""
		return
	}
	if msg := err.Error(); msg != m.saveErr {
		m.saveErr = msg
		m.log.Warn("alarms file not written: retried at the next check (a restart before it may raise or clear an alarm again)", "file", m.cfg.AlarmsFile, "err", err)
	}
}

func (m *Monitor) emit(ctx context.Context, typ event.Type, data event.AlarmData) error {
	d, err := event.NewDraft(typ, "", data)
	if err != nil {
		return err
	}
	// Bounded: the outbox waits out a full disk for as long as its
	// caller lets it, and the probes must go on meanwhile.
	ctx, cancel := context.WithTimeout(ctx, m.cfg.ProbeTimeout)
	defer cancel()
	return m.cfg.Emitter.Emit(ctx, d)
}

// persist writes the alarms raised to AlarmsFile.
func (m *Monitor) persist() error {
	if m.cfg.AlarmsFile == "" {
		return nil
	}
	m.mu.Lock()
	var raised []event.AlarmData
	for code, a := range m.alarms {
		if a.raised {
			raised = append(raised, event.AlarmData{Node: m.cfg.Node, Alarm: code, Check: a.check, Reason: a.reason, Since: a.since})
		}
	}
	m.mu.Unlock()
	return writeAlarms(m.cfg.AlarmsFile, raised)
}

// Statuses returns every check's last result, in the order registered.
func (m *Monitor) Statuses() []Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Status, 0, len(m.checks))
	for _, c := range m.checks {
		out = append(out, *m.status[c.Name])
	}
	return out
}

// Ready returns nil when every blocking check passed its last probe, else
// the first failing one as "<name>: <reason>", or "<name>: <ALARM>: <reason>"
// when it carries an alarm in force.
func (m *Monitor) Ready() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.checks {
		if s := m.status[c.Name]; s.Blocking && !s.OK {
			if s.Alarm != "" {
				return fmt.Errorf("%s: %s: %s", s.Name, s.Alarm, s.Reason)
			}
			return fmt.Errorf("%s: %s", s.Name, s.Reason)
		}
	}
	return nil
}

// Alarms returns the alarms this node's checks can raise, each true while
// in force: a check carrying it fails, or it was raised and its clear is
// not recorded yet.
func (m *Monitor) Alarms() map[event.Alarm]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[event.Alarm]bool, len(m.alarms))
	for code, a := range m.alarms {
		out[code] = a.want || a.raised
	}
	return out
}
