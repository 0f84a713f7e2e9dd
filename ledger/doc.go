// Package ledger is a node's append-only, hash-chained store of every event
// of the AGENTIC_EVENTS stream, kept in Pebble. Roles rebuild all state by
// folding it; `agentctl ledger verify` checks it; nodes compare head hashes.
//
// A follower (ledger/follow) reads the stream in order, verifies each
// message's signature and hands the ledger batches of Messages. Append folds
// them into records, in one Pebble batch committed with Sync.
//
// Invariants:
//
//  1. Append-only. The package has no API that deletes or overwrites a
//     record; positions (Seq) are 1-based and contiguous.
//  2. Chain: h(0) is 32 zero bytes and h(seq) = sha256(h(seq-1) || record
//     bytes), where record bytes are the JSON encoding (encoding/json) of the
//     event.Event with Seq and StreamSeq set.
//  3. Determinism: every ledger that folds the same stream produces the same
//     records byte for byte, hence the same head hash. Ledger-local records
//     (event.Rejected, event.Gap) take their id, time and subject from the
//     stream message, never from the local clock or node.
//  4. Idempotence: a message whose stream sequence is at or below
//     AppliedStreamSeq is skipped, so redelivery never duplicates.
//  5. Nothing is dropped silently: a hole in the stream sequence becomes an
//     event.Gap record (and an Error log), a replayed message id or a
//     duplicate event id becomes an event.Rejected record, and so does a
//     message the follower could not verify.
//  6. Durability: every event write is committed with pebble.Sync. A failed
//     commit returns an error wrapping ErrSync and the store refuses further
//     appends; the node must stop, never acknowledge. Snapshot writes (a
//     role's, an index's) are commits like any other: one that fails (a
//     full disk) is the same error, never a crash, and the store still
//     reads.
//  7. Indexes never disagree with the records: an attached Indexer stages
//     its entries (and, every so often, a snapshot of its in-memory state)
//     in the batch of the records they derive from. A missing index, or one
//     of another layout version, is rebuilt from the records; a damaged
//     snapshot (checksums on every snapshot) is detected and rebuilt from.
//  8. A run id names one run: a second goal.submitted for a run the ledger
//     knows becomes an event.Rejected record ("duplicate run id").
//  9. The seen-set (envelope ids and event ids of accepted messages) is
//     persisted with the records it guards, in the same batch, so replay
//     refusal survives a restart. It is never pruned (about 50 bytes per
//     id): a TTL would have to be derived from the stream, never the clock,
//     to keep ledgers identical.
//  10. Revocations are ledger state: the accepted credential.revoked
//     records. From the stream message after one, every message signed by
//     a credential it revokes becomes an event.Rejected record
//     (credential_revoked); the records before stay. The store reads them
//     from the type index at Open and after Import, so a restart, a copy
//     and a fold from zero refuse the same messages (revoke.go).
//     Store.CheckCredential judges a credential shown outside the stream
//     (an HTTP API token) by the same state, without the append lock.
//
// Keys (seq and stream seq are 8-byte big-endian):
//
//	e/<seq>            record bytes
//	h/<seq>            chain hash
//	m/<streamseq>      the raw signed message, once per stream message
//	r/<run>/<seq>      index by run
//	t/<type>/<seq>     index by type
//	x/<ns><seq>        index by stream time: the unix nanoseconds the stream
//	                   stamped the record's message (Record.StreamTime;
//	                   ledger-local records have their message's time), for
//	                   SeqAtTime
//	j/<id>             seen-set of envelope and event ids
//	g/<run>            runs with a goal.submitted (a run id names one run)
//	s/<name>           role snapshots (framed: magic, seq, sha256, data)
//	c/<kind>\0<id>\0<issued ns><key fingerprint>
//	                   credentials seen signing (CredentialSeen, JSON)
//	i/<index>/...      entries of an attached Indexer (derived, rebuildable)
//	meta/head          head seq, head hash, applied stream seq
//	meta/format        on-disk format version; it only moves forward (Open
//	                   upgrades an older store: format 2 added x/,
//	                   format 3 c/)
//	meta/index/<index>       indexer layout version and position
//	meta/index-snap/<index>  indexer in-memory state (framed like s/)
//
// Example:
//
//	st, err := ledger.Open(dir, ledger.Options{Logger: log})
//	if err != nil { return err }
//	defer st.Close()
//	recs, err := st.Append(msgs) // msgs from the follower, in stream order
//	if err != nil { return err }  // errors.Is(err, ledger.ErrSync): stop the node
//	for rec, err := range st.Scan(1) {
//		if err != nil { return err }
//		fold(rec.Event)
//	}
package ledger
