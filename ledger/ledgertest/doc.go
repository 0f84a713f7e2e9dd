// Package ledgertest is the test kit for code that uses the ledger: a store
// in t.TempDir() closed by t.Cleanup, and a Kit that makes real signed
// messages (a fresh trust root, enrolled identities, envelope.Sign) and
// verifies them with envelope.Verifier into ledger.Message values, the way
// the follower does.
//
// Example:
//
//	st := ledgertest.Open(t)
//	kit := ledgertest.NewKit(t)
//	msg := kit.Message(1, kit.Node, event.MustDraft(event.TaskStarted, run, data))
//	recs, err := st.Append([]ledger.Message{msg})
package ledgertest
