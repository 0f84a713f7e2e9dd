// Package plugin is what the cluster knows of its tool plugins — MCP
// servers that executors start over stdio — as a pure fold of the ledger:
// the manifests operators added (plugin.added), the tool definitions they
// pinned (plugin.approved), the plugins they removed (plugin.removed), and
// the tools each executor's servers reported (executor.online's tools).
// It also reads and checks a manifest file, and hashes tool definitions.
//
// Invariants:
//
//  1. The fold is pure: State.Apply takes events and changes nothing but
//     the state; the same events in the same order give the same state.
//  2. No trust on first use: a tool runs, or reaches a planner's prompt,
//     only when its definition's hash is pinned by a plugin.approved of
//     the manifest in force (Plugin.Check). A definition first seen, or
//     changed since its pin (a rug pull), is refused until an operator
//     approves it.
//  3. A definition's hash (DefinitionHash) covers everything a model or a
//     human is shown of a tool — name, title, description, input and
//     output schemas, annotations — in canonical JSON, so a change of any
//     of them changes the hash.
//  4. A manifest is validated whole (Validate reports every problem); an
//     invalid plugin.added in the ledger is folded as nothing.
//
// Example:
//
//	m, err := plugin.ParseManifest(data, "fs.yaml") // every problem, by line
//	var st plugin.State
//	for _, ev := range events { st.Apply(ev) }
//	if err := st.Check("fs/read_text_file", reportedHash); err != nil { ... }
package plugin
