// Package policies is the policy index: the versions of the safety policy
// the ledger holds, kept in Pebble beside the ledger records and written in
// the same batch (a ledger.Indexer named "policies"), and the query methods
// that read them, policy.show and policy.list.
//
// The index folds policy.applied (an administrator's) and policy.recorded
// (a leader's) exactly as the orchestrator does, by the one rule of
// roles/policy (policy.Applied): a version is Base+1, taken only when Base
// is the version in force; a leader's only into an empty history or for a
// remembered approval's rule; its text must load and hash to the hash it
// names. Each version taken is one entry:
//
//	v/<version be64> → api.PolicyVersion JSON, with the text
//
// Invariants:
//
//  1. The entries depend only on the ledger's records: appends, a restart
//     (snapshot plus replay) and a rebuild give the same entries.
//  2. Versions are dense, 1 to the version in force; the newest entry is
//     the policy in force.
//  3. Reads go to Pebble only, never to the write side's memory, and every
//     reply is bounded: policy.list pages with api.Pager (newest first),
//     policy.show answers one version or a clear too-large error.
//
// Example:
//
//	x := policies.New(logger)
//	if err := x.Attach(store); err != nil { ... } // before the first Append
//	api.HandleTyped(srv, api.MethodPolicyShow, x.Show)
//	api.HandleTyped(srv, api.MethodPolicyList, x.List)
package policies
