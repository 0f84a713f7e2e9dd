// Package research fetches the sources of research steps and reads them
// back for synthesis (docs/memory.md, "Research and notes").
//
// An executor runs a research step (event.KindResearch) with a Fetcher:
// each of the step's sources is an http or https URL, judged by the
// policy's scopes.network before it is fetched and again at every
// redirect (policy.NetworkAllowed, by way of the Allow function the
// executor gives), fetched in the executor's own process with net/http,
// and streamed into a Store — the artifact store (bus/artifact) in the
// JetStream Object Store, named by content — while its sha256 is
// computed: a body never passes through memory whole, and one over
// event.MaxSourceBytes (64 MiB) fails the fetch and records nothing.
// What was fetched is a list of event.ResearchSource (URL, final URL,
// host, sha256, size, time), carried by the step's task.finished; the
// executor records each source as an artifact too (artifact.stored,
// named research/<step>/<index>, with its URL and time), so agentctl
// artifact ls and get show and read it.
//
// A planner synthesising notes (event.KindSynthesise) opens each source
// by its hash, size and object (Store.Open verifies them as it reads), turns it into text (Text) and checks every quote the model
// gives against that text (Contains).
//
// Invariants:
//
//  1. No byte is fetched from a host scopes.network does not allow: the
//     URL's host:port is judged before the request, each redirect's
//     before it is followed; a refusal names the step, the source's
//     index, the host and the policy's reason.
//  2. A stored source's name and hash are returned only after the whole
//     body is in the store; a failed fetch records nothing.
//  3. A source read back is verified against its sha256: a tampered
//     object is an error, never a note's evidence.
package research
