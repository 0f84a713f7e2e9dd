package pebblelog

import "github.com/cockroachdb/pebble/v2"

// FormatMajorVersion is the Pebble on-disk format every store of a node
// (ledger, outbox, executor state) is opened with. It is pinned, never
// pebble.FormatNewest: with Newest, a dependency bump would silently move
// the disk format forward on the next open and make a rollback to the
// previous agentic impossible. Moving it is a deliberate change, made in a
// release of its own and noted in the upgrade docs; Pebble ratchets stores
// written at an older format up to it when they are opened.
const FormatMajorVersion = pebble.FormatValueSeparation
