// Package embedded runs agentic's in-process nats-server with JetStream:
// alone, or one of a cluster of embedded servers routed to each other.
// It is the only package of the bus that links nats-server, so that
// clients of external servers (agentctl) start without it.
//
// Invariants:
//
//  1. JetStream persists with sync_interval: always (Start sets
//     SyncAlways); shipped cluster configs do the same.
//  2. The JetStream store may fill StoreShare percent of its file
//     system's size (MaxStoreFor), not of the space free at start, so the
//     streams load again after a restart on a full disk.
//  3. A JetStream stopped by a write error (a full disk) is restarted only
//     once Config.Space says the disk has room again.
//
// Usage:
//
//	srv, _ := embedded.Start(ctx, embedded.Config{StoreDir: dir, Listen: "127.0.0.1:4222"})
//	defer srv.Shutdown()
//	conn, _ := bus.Connect(ctx, bus.ConnConfig{Server: srv})
//
// A cluster of embedded servers: each with ServerName (the node name),
// ClusterListen, ClusterName and the same Routes (every server's cluster
// URL); JetStream answers once a majority of them is up.
package embedded
