// Package bus is agentic's connection to NATS JetStream: connections to
// an embedded server (bus/embedded, in-process) or to external clusters,
// the streams and buckets the protocol uses, and publishing of signed
// events. It does not link nats-server: bus/embedded does.
//
// Invariants:
//
//  1. JetStream persists with sync_interval: always in the embedded server
//     (bus/embedded sets SyncAlways); shipped cluster configs do the same.
//  2. Streams and buckets are created idempotently (EnsureStreams may be
//     called by every node on every start). EnsureStreams creates an absent
//     stream and never changes an existing one: stream limits and replicas
//     are cluster settings, applied by ledger nodes from the ledger
//     (node/settings), and each stream records in its metadata the
//     settings revision it carries (SettingsRevisionKey).
//  3. AGENTIC_EVENTS denies delete and purge: the event log is append-only.
//  4. Every event message carries Nats-Msg-Id = its jti, so the server's
//     duplicate window drops a republished message; ledgers dedup beyond it.
//  5. Replicas: on a NATS cluster the streams and the leader bucket are
//     created with ClusterReplicas (3), on a lone server with 1
//     (DefaultReplicas); fewer only when the cluster cannot place them
//     after StreamConfig.PlacementWait, with an error logged. A start
//     never lowers a replica count.
//  6. A connection never gives up: it reconnects for ever with backoff
//     (ReconnectBackoff), buffers what is published meanwhile, and logs
//     each disconnection and reconnection. The first connection waits for
//     unreachable servers until its context ends, but not for errors
//     waiting cannot mend (credentials, TLS, unreadable files).
//
// Usage:
//
//	srv, _ := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: "127.0.0.1:4222"})
//	conn, _ := bus.Connect(ctx, bus.ConnConfig{Server: srv})
//	_ = bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{}) // replicas: DefaultReplicas
//	_ = bus.PublishSigned(ctx, conn.JS, identity, drafts...)
package bus
