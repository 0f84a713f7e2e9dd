// Package policy is agentic's safety policy: which shell commands run,
// which wait for an operator's approval and which are refused, and why.
//
// A Policy is loaded from YAML (Parse; the shipped one is Default) and
// judges commands (Judge, JudgeIn). Commands are parsed with a real shell
// parser (package shell): every simple command a shell would run is
// judged, whatever the quoting, chaining, nesting or wrapping. See
// docs/policy.md for the schema and the rules of judgement.
//
// Invariants:
//
//  1. Judging is pure and deterministic: no I/O, no clock, no cache; the
//     same command and policy give the same Verdict, on any node.
//  2. What cannot be resolved statically (a program name from a variable,
//     a substitution, ${IFS} or a glob; a script read from a pipe; inline
//     interpreter code; code built at run time) is never allowed: its
//     action is the policy's Unresolved, confirm or deny, at level high —
//     save inline code that an allow rule names exactly, program and code
//     (pattern: "python3 -c 'print(1)'").
//  3. An allow rule allows exactly what it names: a run-time argument, an
//     extra flag or operand takes a command out of it.
//  4. A policy's Hash names its content: formatting, comments, key order
//     and flag spelling do not change it. Version, the revision the
//     ledger gives it, is recorded beside the hash in every verdict.
//  5. Loading is strict: unknown keys, bad levels, actions, globs and
//     effects, and patterns that are not one plain command are errors
//     naming the line; every problem is reported at once.
//  6. Same effect, same rule: a rule may name an effect class
//     (match.effect: recursive-delete, wipe), and a confirm or deny rule
//     for rm -r stands for both classes, so find -delete, rsync --delete,
//     truncation, dd of=, mv to /dev/null and chmod -R 000 meet the rule
//     that rm -rf meets. Allow rules are never widened to a class.
//
// Usage:
//
//	p, err := policy.Parse(yamlBytes, "policy.yaml")
//	if err != nil { … } // *LoadError, errors.Is(err, policy.ErrInvalid)
//	v := p.Judge("sudo rm -rf /var/www")
//	// v.Action == policy.Confirm, v.Level == policy.High,
//	// v.Rule == "recursive-force-delete", v.Why names rm and -rf,
//	// v.Highlights mark "sudo" and "-rf" with the rules that raised them.
package policy
