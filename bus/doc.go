// Package bus is agentic's connection to NATS JetStream: an embedded
// nats-server for single-machine clusters, connections to external
// clusters, the streams and buckets the protocol uses, and publishing of
// signed events.
//
// Invariants:
//
//  1. JetStream persists with sync_interval: always in the embedded server
//     (Embedded sets SyncAlways); shipped cluster configs do the same.
//  2. Streams and buckets are created idempotently (EnsureStreams may be
//     called by every node on every start). EnsureStreams creates an absent
//     stream and never changes an existing one: stream limits and replicas
//     are cluster settings, applied by ledger nodes from the ledger
//     (node/settings), and each stream records in its metadata the
//     settings revision it carries (SettingsRevisionKey).
//  3. AGENTIC_EVENTS denies delete and purge: the event log is append-only.
//  4. Every event message carries Nats-Msg-Id = its jti, so the server's
//     duplicate window drops a republished message; ledgers dedup beyond it.
//
// Usage:
//
//	srv, _ := bus.StartEmbedded(ctx, bus.EmbeddedConfig{StoreDir: dir, Listen: "127.0.0.1:4222"})
//	conn, _ := bus.Connect(ctx, bus.ConnConfig{Server: srv})
//	_ = bus.EnsureStreams(ctx, conn.JS, bus.StreamConfig{Replicas: 1})
//	_ = bus.PublishSigned(ctx, conn.JS, identity, drafts...)
package bus
