// Package apiwire holds the query API's wire types: the method names, the
// requests and answers, the pages a listing is cut into, the error codes
// and hints, and the public views of runs, steps, nodes and alarms. It is
// on the floor of the module's layers (internal/layers): roles and
// ledger-level packages use these types without importing node, where
// node/api serves and asks the API over NATS and re-exports every name
// here.
//
// Invariants:
//
//  1. Only data and pure functions: no I/O, no NATS, nothing of the
//     module above bus/event and internal/.
//  2. The JSON shapes are only ever extended: a field is added, never
//     renamed or given another meaning (docs/protocol.md, docs/cli.md).
package apiwire
