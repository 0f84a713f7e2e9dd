package settings

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
)

// Bounds of the stream settings.
const (
	// MinMaxAge is the smallest age limit (above 0, which means none): the
	// events stream's duplicate window is 2 minutes, and a shorter buffer
	// would lose events whenever a node restarts.
	MinMaxAge = time.Hour
	// MinMaxBytes is the smallest byte limit (above 0, which means none):
	// a stream must hold a good number of its largest (1 MiB) messages.
	MinMaxBytes = 64 << 20
	// MaxReplicas is JetStream's largest replica count.
	MaxReplicas = 5
	// MinLeaseTTL and MaxLeaseTTL bound the leader lease TTL: below half a
	// second a leader renews every 166 ms and a scheduling stall costs it
	// the lease; above a minute a dead leader stops the cluster that long.
	MinLeaseTTL = 500 * time.Millisecond
	MaxLeaseTTL = time.Minute
	// MinClaimTimeout and MaxClaimTimeout bound the claim timeout: below a
	// second a planner that is busy claiming loses goals to no_planner;
	// above an hour a cluster without a planner holds a goal that long.
	MinClaimTimeout = time.Second
	MaxClaimTimeout = time.Hour
)

// Settings are the cluster settings in force: revision 0 is the defaults,
// in force until the ledger records a cluster.settings event.
type Settings struct {
	Revision uint64
	Events   bus.StreamSettings
	Logs     bus.StreamSettings
	// LeaseTTL is the orchestrators' leader lease TTL (and the leader
	// bucket's).
	LeaseTTL time.Duration
	// Repair is the rule for a stream found deleted or drifted:
	// event.StreamsRepairAlarm (the default) or
	// event.StreamsRepairRestore. See RepairRule.
	Repair string
	// ClaimTimeout is how long a goal waits for a planner that can plan
	// it (event.PlanningSettingsData): planners and orchestrators time
	// no_planner by it.
	ClaimTimeout time.Duration
}

// Restores reports whether the settings' repair rule is restore.
func (s Settings) Restores() bool { return s.Repair == event.StreamsRepairRestore }

// ParseRepair checks a repair rule: alarm or restore; "" is alarm (the
// default, and what settings recorded before the rule existed mean).
func ParseRepair(v string) (string, error) {
	switch strings.TrimSpace(v) {
	case "", event.StreamsRepairAlarm:
		return event.StreamsRepairAlarm, nil
	case event.StreamsRepairRestore:
		return event.StreamsRepairRestore, nil
	}
	return "", fmt.Errorf("streams repair %q: want %s or %s", v, event.StreamsRepairAlarm, event.StreamsRepairRestore)
}

// Default returns the settings in force on a lone NATS server when the
// ledger records none.
func Default() Settings {
	return Settings{Events: bus.DefaultEventsSettings, Logs: bus.DefaultLogsSettings, LeaseTTL: event.DefaultLeaseTTL, Repair: event.StreamsRepairAlarm,
		ClaimTimeout: event.DefaultClaimTimeout}
}

// DefaultWith returns the settings in force when the ledger records none
// with both streams at replicas: bus.DefaultReplicas, 3 on a NATS cluster,
// which is what a node's start creates absent streams with. Below 1 it is
// Default.
func DefaultWith(replicas int) Settings {
	s := Default()
	if replicas > 1 {
		s.Events.Replicas, s.Logs.Replicas = replicas, replicas
	}
	return s
}

// Validate reports every problem of s at once.
func (s Settings) Validate() error {
	var lease error
	if err := CheckLeaseTTL(s.LeaseTTL); err != nil {
		lease = fmt.Errorf("lease %w", err)
	}
	_, repair := ParseRepair(s.Repair)
	var claim error
	if err := CheckClaimTimeout(s.ClaimTimeout); err != nil {
		claim = fmt.Errorf("planning %w", err)
	}
	return errors.Join(checkStream("events", s.Events), checkStream("logs", s.Logs), lease, repair, claim)
}

// CheckClaimTimeout checks a claim timeout: MinClaimTimeout to
// MaxClaimTimeout.
func CheckClaimTimeout(d time.Duration) error {
	if d < MinClaimTimeout || d > MaxClaimTimeout {
		return fmt.Errorf("claim timeout %s: want %s to %s", d, MinClaimTimeout, FormatAge(MaxClaimTimeout))
	}
	return nil
}

// CheckLeaseTTL checks a leader lease TTL: MinLeaseTTL to MaxLeaseTTL.
func CheckLeaseTTL(d time.Duration) error {
	if d < MinLeaseTTL || d > MaxLeaseTTL {
		return fmt.Errorf("ttl %s: want %s to %s", d, MinLeaseTTL, FormatAge(MaxLeaseTTL))
	}
	return nil
}

func checkStream(name string, st bus.StreamSettings) error {
	var errs []error
	for _, err := range []error{CheckMaxAge(st.MaxAge), CheckMaxBytes(st.MaxBytes), CheckReplicas(st.Replicas)} {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %w", name, err))
		}
	}
	return errors.Join(errs...)
}

// CheckMaxAge checks an age limit: 0 (none) or at least MinMaxAge.
func CheckMaxAge(d time.Duration) error {
	if d < 0 || (d > 0 && d < MinMaxAge) {
		return fmt.Errorf("max age %s: want 0s (no limit) or at least %s", FormatAge(d), FormatAge(MinMaxAge))
	}
	return nil
}

// CheckMaxBytes checks a byte limit: 0 (none) or at least MinMaxBytes.
func CheckMaxBytes(n int64) error {
	if n < 0 || (n > 0 && n < MinMaxBytes) {
		return fmt.Errorf("max bytes %d: want 0 (no limit) or at least %s", n, FormatBytes(MinMaxBytes))
	}
	return nil
}

// CheckReplicas checks a replica count: 1 to MaxReplicas.
func CheckReplicas(n int) error {
	if n < 1 || n > MaxReplicas {
		return fmt.Errorf("replicas %d: want 1 to %d", n, MaxReplicas)
	}
	return nil
}

// Data is s as a cluster.settings payload.
func (s Settings) Data() event.ClusterSettingsData {
	return event.ClusterSettingsData{Revision: s.Revision, Streams: event.ClusterStreamsData{
		Events: streamData(s.Events),
		Logs:   streamData(s.Logs),
		Repair: repairData(s.Repair),
	}, Lease: event.LeaseSettingsData{TTL: event.Duration(s.LeaseTTL)},
		Planning: event.PlanningSettingsData{ClaimTimeout: event.Duration(s.ClaimTimeout)}}
}

// repairData is the repair rule as a payload carries it: absent for the
// default (alarm), so that settings keeping it are written as before the
// rule existed.
func repairData(rule string) string {
	if rule == event.StreamsRepairRestore {
		return rule
	}
	return ""
}

func streamData(st bus.StreamSettings) event.StreamSettingsData {
	return event.StreamSettingsData{MaxAge: FormatAge(st.MaxAge), MaxBytes: st.MaxBytes, Replicas: st.Replicas}
}

// FromData parses and validates a cluster.settings payload, reporting
// every problem at once. A payload without a lease TTL (written before the
// TTL was a setting) takes the default, one without a repair rule the
// alarm rule, and one without a claim timeout (before protocol version 6)
// the default.
func FromData(d event.ClusterSettingsData) (Settings, error) {
	s := Settings{Revision: d.Revision, LeaseTTL: d.Lease.TTL.Std(), ClaimTimeout: d.Planning.ClaimTimeout.Std()}
	if s.LeaseTTL == 0 {
		s.LeaseTTL = event.DefaultLeaseTTL
	}
	if s.ClaimTimeout == 0 {
		s.ClaimTimeout = event.DefaultClaimTimeout
	}
	var errs []error
	var err error
	if s.Repair, err = ParseRepair(d.Streams.Repair); err != nil {
		errs = append(errs, err)
	}
	if s.Events, err = streamFromData("events", d.Streams.Events); err != nil {
		errs = append(errs, err)
	}
	if s.Logs, err = streamFromData("logs", d.Streams.Logs); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return Settings{}, err
	}
	if err := s.Validate(); err != nil {
		return Settings{}, err
	}
	return s, nil
}

func streamFromData(name string, d event.StreamSettingsData) (bus.StreamSettings, error) {
	age, err := ParseAge(d.MaxAge)
	if err != nil {
		return bus.StreamSettings{}, fmt.Errorf("%s max age: %w", name, err)
	}
	return bus.StreamSettings{MaxAge: age, MaxBytes: d.MaxBytes, Replicas: d.Replicas}, nil
}

// ParseAge parses a Go duration ("720h", "90m"); "0" or "0s" means no limit.
func ParseAge(s string) (time.Duration, error) {
	if strings.TrimSpace(s) == "" {
		return 0, errors.New(`empty duration: want a Go duration such as "720h", or "0s" for no limit`)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: want a Go duration such as \"720h\" (hours are the largest unit), or \"0s\" for no limit", s)
	}
	return d, nil
}

// FormatAge writes d as a Go duration without trailing zero units: "720h",
// "1h30m", "0s".
func FormatAge(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40},
	{"b", 1},
}

// ParseBytes parses a byte count: an integer with an optional unit, binary
// (KiB, MiB, GiB, TiB; K, M, G, T alike) or decimal (KB, MB, GB, TB), case
// not significant: "2GiB", "512MiB", "1500000000". "0" means no limit.
// Fractions ("1.5GiB") are allowed with a unit and rounded down to a byte.
func ParseBytes(s string) (int64, error) {
	in := strings.TrimSpace(s)
	num, mult := strings.ToLower(in), int64(1)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = strings.TrimSpace(n), u.mult
			break
		}
	}
	bad := fmt.Errorf("%q is not a byte count: want a number with an optional unit, such as 2GiB, 512MiB or 1500000000", in)
	if num == "" {
		return 0, bad
	}
	if n, err := strconv.ParseInt(num, 10, 64); err == nil {
		if n < 0 {
			return 0, fmt.Errorf("%q: a byte count cannot be negative", in)
		}
		if n > math.MaxInt64/mult {
			return 0, fmt.Errorf("%q: too large", in)
		}
		return n * mult, nil
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || mult == 1 {
		return 0, bad
	}
	if f < 0 {
		return 0, fmt.Errorf("%q: a byte count cannot be negative", in)
	}
	if f*float64(mult) >= math.MaxInt64 {
		return 0, fmt.Errorf("%q: too large", in)
	}
	return int64(f * float64(mult)), nil
}

// FormatBytes writes n in the largest binary unit that divides it ("4GiB",
// "1536MiB", "1000B"); 0 is "0" (no limit).
func FormatBytes(n int64) string {
	if n == 0 {
		return "0"
	}
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}
