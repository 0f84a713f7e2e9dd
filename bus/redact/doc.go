// Package redact finds and hides secrets in text: command lines, step
// output, event payloads, memory facts. Secrets are redacted when an event
// is created, and the envelope refuses to sign or accept an event that
// still carries one (DESIGN.md "Secrets").
//
// Two kinds of secret are found:
//
//   - known shapes, by versioned rule sets (Set): provider tokens by their
//     prefixes (AWS, GitHub, GitLab, Stripe, Google, npm, Slack…) wherever
//     they start (set 3: glued to the text before them too), JWTs,
//     private keys and their bodies, password=… assignments, the password
//     flags of common command-line tools (mysql -pPW, sshpass -p, docker
//     login -p, curl -u user:pw…), URL userinfo and random-looking values
//     (a bare AWS secret key, NAME=<high-entropy value>);
//   - the exact values of secrets this process knows (Remember,
//     RememberEnv): the values of its environment variables whose names look
//     secret, configured secret values.
//
// Each is replaced by [REDACTED:<rule>] (Label), so an operator can tell
// what was hidden and by which rule; key names, header names and URL users
// stay visible. Redact is idempotent. Values that are plainly not secrets —
// a shell variable reference ($DB_PASSWORD, ${TOKEN}), a number
// (max_tokens: 500), a label of an earlier redaction — are left alone, so
// a plan may name a secret without carrying it.
//
// Step output is redacted as a stream (Stream): a window carried across
// chunk boundaries, so that a secret written in pieces is redacted whole.
//
// Invariants:
//
//  1. A released set's rules never change (rejection reasons quote a
//     rule's name, and every ledger must reach the same verdict); a later
//     set adds rules, or replaces a rule by a form of its own under the
//     same name (set 3: tokens glued to text, names that merely contain a
//     secret word).
//  2. ContainsSecret(Redact(s)) is false, and Redact(Redact(s)) ==
//     Redact(s).
//  3. A Stream never releases a byte of a secret it can recognise: what it
//     has not judged yet it holds back, for a bounded time and size.
//
// It is a pattern filter, not a guarantee: a secret in an unknown format
// that this process was not told about passes through.
package redact
