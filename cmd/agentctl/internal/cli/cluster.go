package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/node/settings"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

func (a *app) clusterCmd() *cobra.Command {
	return group("cluster", "Cluster-wide settings",
		`Cluster-wide settings are facts in the ledger, the same for every node,
changed only with agentctl (no node takes them from its configuration file).`,
		group("settings", "Show or change the cluster settings (stream limits and replicas, lease TTL, claim timeout)",
			`The cluster settings are the limits and replicas of the AGENTIC_EVENTS and
AGENTIC_LOGS streams, the orchestrators' leader lease TTL and the planners'
claim timeout. Each change is
a cluster.settings event in the ledger carrying the full settings and a
revision number; ledger nodes apply it to the streams and the leader bucket,
and every orchestrator times its lease by it. A stream that differs from the
settings in force is drift, and a deleted one is missing: nodes raise an
alarm at once (log, metric, "show") and, under the default streams repair
rule (alarm), never correct it on their own.`,
			a.clusterSettingsShowCmd(), a.clusterSettingsSetCmd()))
}

// clusterSettings asks a ledger node for the settings in force.
func (a *app) clusterSettings(ctx context.Context) (*settings.InForce, error) {
	c, err := a.client()
	if err != nil {
		return nil, err
	}
	var in settings.InForce
	if err := c.Call(ctx, settings.Method, nil, &in); err != nil {
		return nil, err
	}
	return &in, nil
}

func (a *app) clusterSettingsShowCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show",
		Short: "Print the cluster settings in force",
		Long: `Print the cluster settings in force, as a ledger node folded them from the
ledger (the defaults, revision 0, until one is recorded), and any drift the
node found when it last compared the streams with them. -o json prints the
answer object documented in docs/cli.md.`,
		Example: `  agentctl cluster settings show
  agentctl cluster settings show -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := a.clusterSettings(cmd.Context())
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(in)
			}
			return a.printSettings(in)
		},
	}
}

// settingsFlags are the values given to cluster settings set.
type settingsFlags struct {
	eventsAge, eventsBytes, logsAge, logsBytes string
	eventsReplicas, logsReplicas               int
	leaseTTL                                   string
	streamsRepair                              string
	claimTimeout                               string
	reapply                                    bool
}

func (a *app) clusterSettingsSetCmd() *cobra.Command {
	var f settingsFlags
	cmd := &cobra.Command{
		Use:   "set",
		Short: "Change the cluster settings",
		Long: `Read the settings in force, change what the flags say, and publish the full
settings as a cluster.settings event (revision + 1), signed with your
operator credentials. Every value is checked before anything is published.
Then wait (up to --timeout) until a ledger node has the new revision in
force, bring the streams and the leader bucket to it (only admin
credentials may update a stream: with operator credentials the settings
are recorded and the streams stay behind, shown as drift, until an
administrator runs --reapply), and print the result as a ledger node
compares it.

Ages are Go durations (720h, 90m; 0s: no limit; at least 1h otherwise).
Sizes take binary units (512MiB, 4GiB; also K, M, G, T) or decimal ones
(500MB, 2GB); 0: no limit; at least 64MiB otherwise. Replicas: 1 to 5.
The lease TTL is a Go duration from 500ms to 1m (default 1.5s): a killed
leader is replaced within about a TTL, and a leader that cannot renew for
two thirds of it loses the lease.
--claim-timeout is how long a goal (or a replan request) waits for a planner
that can plan it, a Go duration from 1s to 1h (default 30s): then a planner
that cannot rejects it with code no_planner, and when no planner answers at
all (no planner node) the leader fails the run with that code the claim
timeout and half of it again (at least 1s) after the goal, the replan
request, the lapse of the latest claim or the leader's election.
--streams-repair is the rule for a stream (or the leader bucket) found
deleted or changed behind the settings: alarm (the default) raises the
STREAM_MISSING or STREAM_DRIFT alarm and leaves the stream for an operator;
restore has the ledger node that notices recreate a deleted stream (its
sequence continuing), log it, and clear the alarm; a changed stream is put
back by an administrator. --reapply publishes the settings in force again
unchanged and applies them to the streams (the way to repair drift).`,
		Example: `  agentctl cluster settings set --events-max-age 720h --logs-max-bytes 2GiB
  agentctl cluster settings set --events-max-bytes 0     # no byte limit
  agentctl cluster settings set --lease-ttl 3s
  agentctl cluster settings set --claim-timeout 1m
  agentctl cluster settings set --streams-repair restore
  agentctl cluster settings set --reapply`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.clusterSettingsSet(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.eventsAge, "events-max-age", "", "age limit of AGENTIC_EVENTS (Go duration; 0s: none)")
	fl.StringVar(&f.eventsBytes, "events-max-bytes", "", "byte limit of AGENTIC_EVENTS (e.g. 4GiB; 0: none)")
	fl.IntVar(&f.eventsReplicas, "events-replicas", 0, "replicas of AGENTIC_EVENTS (1-5)")
	fl.StringVar(&f.logsAge, "logs-max-age", "", "age limit of AGENTIC_LOGS (Go duration; 0s: none)")
	fl.StringVar(&f.logsBytes, "logs-max-bytes", "", "byte limit of AGENTIC_LOGS (e.g. 1GiB; 0: none)")
	fl.IntVar(&f.logsReplicas, "logs-replicas", 0, "replicas of AGENTIC_LOGS (1-5)")
	fl.StringVar(&f.leaseTTL, "lease-ttl", "", "orchestrators' leader lease TTL (Go duration, 500ms to 1m)")
	fl.StringVar(&f.claimTimeout, "claim-timeout", "", "how long a goal waits for a planner that can plan it (Go duration, 1s to 1h)")
	fl.StringVar(&f.streamsRepair, "streams-repair", "", "rule for a deleted or drifted stream: alarm (default) or restore")
	fl.BoolVar(&f.reapply, "reapply", false, "publish the settings in force again, unchanged")
	return cmd
}

// apply changes s as the flags say; it reports every bad value at once as
// a usage error.
func (f settingsFlags) apply(cmd *cobra.Command, s *settings.Settings) error {
	changed := cmd.Flags().Changed
	var errs []error
	age := func(flag, v string, into *time.Duration) {
		if !changed(flag) {
			return
		}
		d, err := settings.ParseAge(v)
		if err == nil {
			err = settings.CheckMaxAge(d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			return
		}
		*into = d
	}
	size := func(flag, v string, into *int64) {
		if !changed(flag) {
			return
		}
		n, err := settings.ParseBytes(v)
		if err == nil {
			err = settings.CheckMaxBytes(n)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			return
		}
		*into = n
	}
	replicas := func(flag string, v int, into *int) {
		if !changed(flag) {
			return
		}
		if err := settings.CheckReplicas(v); err != nil {
			errs = append(errs, fmt.Errorf("--%s: %w", flag, err))
			return
		}
		*into = v
	}
	age("events-max-age", f.eventsAge, &s.Events.MaxAge)
	size("events-max-bytes", f.eventsBytes, &s.Events.MaxBytes)
	replicas("events-replicas", f.eventsReplicas, &s.Events.Replicas)
	if changed("lease-ttl") {
		d, err := time.ParseDuration(strings.TrimSpace(f.leaseTTL))
		if err != nil {
			err = fmt.Errorf("%q is not a duration: want a Go duration such as \"1.5s\" or \"3s\"", f.leaseTTL)
		} else {
			err = settings.CheckLeaseTTL(d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--lease-ttl: %w", err))
		} else {
			s.LeaseTTL = d
		}
	}
	if changed("claim-timeout") {
		d, err := time.ParseDuration(strings.TrimSpace(f.claimTimeout))
		if err != nil {
			err = fmt.Errorf("%q is not a duration: want a Go duration such as \"30s\" or \"2m\"", f.claimTimeout)
		} else {
			err = settings.CheckClaimTimeout(d)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--claim-timeout: %w", err))
		} else {
			s.ClaimTimeout = d
		}
	}
	if changed("streams-repair") {
		if r, err := settings.ParseRepair(f.streamsRepair); err != nil || strings.TrimSpace(f.streamsRepair) == "" {
			errs = append(errs, fmt.Errorf("--streams-repair %q: want %s or %s", f.streamsRepair, event.StreamsRepairAlarm, event.StreamsRepairRestore))
		} else {
			s.Repair = r
		}
	}
	age("logs-max-age", f.logsAge, &s.Logs.MaxAge)
	size("logs-max-bytes", f.logsBytes, &s.Logs.MaxBytes)
	replicas("logs-replicas", f.logsReplicas, &s.Logs.Replicas)
	if err := errors.Join(errs...); err != nil {
		return &usageError{err}
	}
	return nil
}

func (a *app) clusterSettingsSet(cmd *cobra.Command, f settingsFlags) error {
	if !f.reapply && !anyChanged(cmd, "events-max-age", "events-max-bytes", "events-replicas", "logs-max-age", "logs-max-bytes", "logs-replicas", "lease-ttl", "claim-timeout", "streams-repair") {
		return usagef("nothing to change: give at least one of --events-max-age, --events-max-bytes, --events-replicas, --logs-max-age, --logs-max-bytes, --logs-replicas, --lease-ttl, --claim-timeout, --streams-repair, or --reapply")
	}
	// Check the values before asking anything: a bad flag never costs a
	// round trip, and nothing is published.
	var probe settings.Settings
	if err := f.apply(cmd, &probe); err != nil {
		return err
	}
	ctx := cmd.Context()
	cur, err := a.clusterSettings(ctx)
	if err != nil {
		return fmt.Errorf("read the settings in force (nothing was changed): %w", err)
	}
	s, err := settings.FromData(cur.ClusterSettingsData)
	if err != nil {
		return fmt.Errorf("the settings in force do not parse (nothing was changed): %w", err)
	}
	if err := f.apply(cmd, &s); err != nil {
		return err
	}
	s.Revision = cur.Revision + 1
	if err := s.Validate(); err != nil {
		return &usageError{err}
	}
	d, err := event.NewDraft(event.ClusterSettings, "", s.Data())
	if err != nil {
		return err
	}
	if err := a.publish(ctx, d); err != nil {
		return fmt.Errorf("cluster settings set: %w", err)
	}
	in, err := a.waitSettings(ctx, s.Revision, d.ID)
	if err != nil {
		return err
	}
	var applyErr error
	if in.Revision == s.Revision {
		applied, err := a.applySettings(ctx, s, in)
		if err != nil {
			applyErr = err // reported after the settings and their drift
		} else {
			in = applied
		}
	}
	if a.output != formatText {
		if err := a.writeJSON(in); err != nil {
			return err
		}
	} else if err := a.printSettings(in); err != nil {
		return err
	}
	if applyErr != nil {
		return applyErr
	}
	if len(in.Drift) > 0 {
		return api.WithHint(fmt.Errorf("cluster settings revision %d is recorded, but the streams do not match it (see the drift above)", s.Revision),
			"the node's log says why it could not apply them; a replica count above 1 needs a NATS cluster")
	}
	return nil
}

// applySettings brings the streams to s, recorded and in force (in), as
// an administrator may (settings.Apply: only admin credentials may update
// a stream), and waits until a ledger node has compared them again after
// its changes. It returns the settings in force as that node then reports
// them.
func (a *app) applySettings(ctx context.Context, s settings.Settings, in *settings.InForce) (*settings.InForce, error) {
	nc, err := a.conn()
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	actx, cancel := context.WithTimeout(ctx, a.timeout)
	applied, err := settings.Apply(actx, js, s)
	cancel()
	if err != nil {
		hint := "only an administrator may change the streams: run the command again with admin credentials (agentctl keys operator NAME --role admin), with --reapply once the settings are recorded"
		if !errors.Is(err, nats.ErrPermissionViolation) {
			hint = "agentctl cluster settings show lists the drift; a replica count above 1 needs a NATS cluster"
		}
		return nil, api.WithHint(fmt.Errorf("cluster settings revision %d is recorded, but the streams could not be brought to it: %w", s.Revision, err), hint)
	}
	updated := false
	for _, ap := range applied {
		updated = updated || ap.Updated
	}
	if !updated {
		return in, nil
	}
	// The ledger nodes compare again on the streams' advisories: wait for
	// a comparison made after the update.
	after := time.Now()
	deadline := after.Add(a.timeout)
	tick := time.NewTicker(a.poll)
	defer tick.Stop()
	for {
		cur, err := a.clusterSettings(ctx)
		if err == nil && cur.Revision == s.Revision && cur.Checked.After(after) && len(cur.Drift) == 0 {
			return cur, nil
		}
		if err == nil && cur.Revision != s.Revision {
			return cur, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				return cur, nil // printed with its drift
			}
			return in, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func anyChanged(cmd *cobra.Command, names ...string) bool {
	for _, n := range names {
		if cmd.Flags().Changed(n) {
			return true
		}
	}
	return false
}

// waitSettings polls until a ledger node has revision rev in force and has
// compared the streams with it, and checks that rev is the event id's.
func (a *app) waitSettings(ctx context.Context, rev uint64, id string) (*settings.InForce, error) {
	deadline := time.Now().Add(a.timeout)
	tick := time.NewTicker(a.poll)
	defer tick.Stop()
	for {
		in, err := a.clusterSettings(ctx)
		switch {
		case err != nil && !errors.Is(err, api.ErrTimeout):
			return nil, fmt.Errorf("cluster settings revision %d published (event %s), but: %w", rev, id, err)
		case err == nil && in.Revision == rev && in.Event != id:
			return nil, api.WithHint(fmt.Errorf("cluster settings revision %d was taken by another change made at the same time (event %s by %s); yours (event %s) was recorded and ignored",
				in.Revision, in.Event, in.By, id), "look at the settings in force with agentctl cluster settings show, then run the command again")
		case err == nil && in.Revision > rev:
			return in, nil // a later change is already in force
		case err == nil && in.Revision == rev && in.CheckedRevision == rev:
			return in, nil
		}
		if time.Now().After(deadline) {
			return nil, api.WithHint(fmt.Errorf("cluster settings revision %d published (event %s), but no node reports it applied after %s", rev, id, a.timeout),
				"check with agentctl cluster settings show; a node applies the settings once its ledger is live")
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func (a *app) printSettings(in *settings.InForce) error {
	w := a.env.Stdout
	if in.Recorded {
		fmt.Fprintf(w, "cluster settings revision %d, set by %s at %s (event %s, ledger seq %d)\n", in.Revision, in.By, fmtTime(in.Time), in.Event, in.Seq)
	} else {
		fmt.Fprintf(w, "cluster settings revision 0: the defaults (the ledger records no cluster.settings event)\n")
	}
	tw := a.table()
	fmt.Fprintln(tw, "STREAM\tMAX AGE\tMAX BYTES\tREPLICAS")
	for _, st := range []struct {
		name string
		s    event.StreamSettingsData
	}{{bus.EventsStream, in.Streams.Events}, {bus.LogsStream, in.Streams.Logs}} {
		maxBytes := noLimit(st.s.MaxBytes == 0, settings.FormatBytes(st.s.MaxBytes))
		// A stream made smaller to fit its store shows what it has.
		if i := slices.IndexFunc(in.Sized, func(s settings.Sized) bool { return s.Stream == st.name }); i >= 0 {
			maxBytes = fmt.Sprintf("%s (settings: %s; lowered to fit the JetStream store)", settings.FormatBytes(in.Sized[i].Created), maxBytes)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\n", st.name, noLimit(st.s.MaxAge == "0s", st.s.MaxAge), maxBytes, st.s.Replicas)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ttl := in.Lease.TTL.Std()
	if ttl == 0 {
		ttl = event.DefaultLeaseTTL
	}
	fmt.Fprintf(w, "leader lease TTL %s (renewed every %s; the %s bucket expires it)\n", ttl, ttl/3, bus.LeaderBucket)
	claim := in.Planning.ClaimTimeout.Std()
	if claim == 0 {
		claim = event.DefaultClaimTimeout
	}
	fmt.Fprintf(w, "claim timeout %s (a goal no planner can plan fails with no_planner)\n", claim)
	if in.Streams.Repair == event.StreamsRepairRestore {
		fmt.Fprintln(w, "streams repair: restore (a deleted stream is recreated, a drifted one put back, by the ledger node that notices)")
	} else {
		fmt.Fprintln(w, "streams repair: alarm (a deleted or drifted stream raises an alarm and is left for an operator)")
	}
	printDrift(w, in)
	return nil
}

func noLimit(none bool, v string) string {
	if none {
		return "none"
	}
	return v
}

func printDrift(w io.Writer, in *settings.InForce) {
	switch {
	case in.Checked.IsZero():
		fmt.Fprintf(w, "node %s has not compared the streams with the settings yet (its ledger is not live)\n", in.Node)
	case len(in.Drift) == 0 && len(in.Sized) > 0:
		fmt.Fprintf(w, "node %s compared the streams at %s: they match, but for the byte limits lowered to fit the JetStream store (free disk space, or raise disk.jetstream_max_store, then apply with agentctl cluster settings set --reapply)\n", in.Node, fmtTime(in.Checked))
	case len(in.Drift) == 0:
		fmt.Fprintf(w, "node %s compared the streams at %s: they match\n", in.Node, fmtTime(in.Checked))
	default:
		fmt.Fprintf(w, "DRIFT: node %s found the streams differ from the settings at %s:\n", in.Node, fmtTime(in.Checked))
		for _, d := range in.Drift {
			fmt.Fprintf(w, "  %s %s: expected %s, actual %s\n", d.Stream, d.Field, d.Expected, d.Actual)
		}
		if in.Streams.Repair == event.StreamsRepairRestore {
			fmt.Fprintln(w, "  (streams repair rule restore: nodes recreate a deleted stream; an administrator puts a changed one back with agentctl cluster settings set --reapply)")
		} else {
			fmt.Fprintln(w, "  (streams repair rule alarm: nodes do not correct drift; an administrator applies the settings again with agentctl cluster settings set --reapply)")
		}
	}
}
