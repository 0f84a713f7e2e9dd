// Package research fetches the sources of research steps and reads them
// back for synthesis (docs/memory.md, "Research and notes").
//
// An executor runs a research step (event.KindResearch) with a Fetcher:
// each of the step's sources is an http or https URL, judged by the
// policy's scopes.network before it is fetched and again at every
// redirect (policy.NetworkAllowed, by way of the Allow function the
// executor gives), fetched in the executor's own process with net/http,
// and streamed into a Store — the JetStream Object Store — while its
// sha256 is computed: a body never passes through memory whole, and one
// over event.MaxSourceBytes (64 MiB) fails the fetch and records no
// object. What was fetched is a list of event.ResearchSource (URL,
// final URL, host, sha256, size, time), carried by the step's
// task.finished.
//
// A planner synthesising notes (event.KindSynthesise) opens each source
// by its object name and hash (Store.Open verifies the hash as it
// reads), turns it into text (Text) and checks every quote the model
// gives against that text (Contains).
//
// Invariants:
//
//  1. No byte is fetched from a host scopes.network does not allow: the
//     URL's host:port is judged before the request, each redirect's
//     before it is followed; a refusal names the step, the source's
//     index, the host and the policy's reason.
//  2. A stored source's name and hash are returned only after the whole
//     body is in the store; a failed fetch records no object (its meta
//     is never written).
//  3. A source read back is verified against its sha256: a tampered
//     object is an error, never a note's evidence.
package research
