// Package settings keeps the cluster settings: the limits and replicas of
// the AGENTIC_EVENTS and AGENTIC_LOGS streams and the orchestrators'
// leader lease TTL, recorded in the ledger as cluster.settings events
// (event.ClusterSettingsData) and changed with agentctl cluster settings
// set. No node takes them from its own configuration file.
//
// A ledger node runs one Cluster: a roles.Folder that folds
// cluster.settings events into the settings in force (the defaults,
// revision 0, until the ledger records one), restored from its snapshot
// like the roles. Once the node is live it compares the streams with
// those settings and reports how they differ; it answers the query method
// Method (agentctl cluster settings show). Nodes never update a stream:
// only an administrator's credentials may (bus/natsauth), and Apply is
// what an administrator runs (agentctl cluster settings set).
//
// Invariants:
//
//  1. Every cluster.settings event carries the full settings and a
//     revision; the fold takes an event only if it is valid and its
//     revision is above the one in force, so every ledger node ends with
//     the same settings whatever it folded before.
//  2. A stream records in its metadata (bus.SettingsRevisionKey) the
//     revision it was created or last updated with. Ledger nodes only
//     compare: a stream at an older revision than the one in force (or
//     recording none while settings are recorded) is drift on
//     FieldRevision, with its fields' differences, until an administrator
//     applies the settings (Apply: agentctl cluster settings set does once
//     the ledger has the revision in force, --reapply again later; the
//     update keeps the stream's sequence and foreign metadata, is
//     idempotent, and leaves a stream at a newer revision alone). A
//     stream at the revision in force that differs from it is drift too.
//     Drift is logged at error level once per difference, exposed on the
//     query API and as the agentic_stream_drift metric, and raised as the
//     STREAM_DRIFT alarm (a stream absent: STREAM_MISSING, blocking
//     readiness) — at once, from the JetStream advisories about the
//     streams, with a comparison every CheckEvery as the backstop.
//  3. A node's start only creates absent streams (bus.EnsureStreams, with
//     the defaults at revision 0: three replicas on a NATS cluster, one on
//     a lone server, bus.DefaultReplicas; Config.Replicas gives the same
//     count to the defaults here, so a cluster's streams are not drift,
//     and a stream the cluster could only place with fewer is). Where the
//     ledger records settings, such a new stream is behind them (rule 2)
//     until an administrator applies them. Nothing else changes a stream
//     (but a restore under rule 5): a restart with another configuration
//     file leaves it as it is.
//  4. The leader bucket (bus.LeaderBucket) follows the lease TTL the same
//     way, compared on its TTL alone: behind the revision in force, or
//     without a settings revision (made by a version that took the TTL
//     from a node's configuration), it is drift on FieldRevision until an
//     administrator applies the settings (Apply brings its TTL and
//     duplicate window to the setting, its lease kept). Cluster.LeaseTTL
//     is what every orchestrator of the node times its lease by, whatever
//     the bucket says.
//  5. Drift is corrected by nodes only under the explicit streams repair
//     rule, a cluster setting (Settings.Repair), and only for a deleted
//     stream: under alarm (the default) a node never recreates a deleted
//     stream; under restore the node that notices recreates it with the
//     settings in force — AGENTIC_EVENTS with its first sequence after the
//     ledger's applied one and the last one seen, so sequences go on —,
//     logs that it did, and the alarm clears as restored (creating a
//     stream is a node's right, updating one is not). A changed stream is
//     drift under either rule until an administrator puts it back (Apply)
//     or records its values. The default is alarm: recreating at once
//     hides a deletion, and what the deleted stream held is lost either
//     way.
//
// Usage (the node wires this):
//
//	c := settings.New(settings.Config{Node: name, NC: nc, JS: js, Logger: log,
//		AppliedSeq: store.AppliedStreamSeq})
//	// add c to the follower's folders and to the node's roles, and
//	// c.Checks() to the node's readiness checks
//	c.Start(ctx)
//	defer c.Stop(ctx)
package settings
