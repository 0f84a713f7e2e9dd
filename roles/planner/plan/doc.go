// Package plan reads, checks and normalizes plans: the DAG of steps a run
// executes. It owns the authoring formats below — what people and LLM
// prompts write — and gives the protocol's form of a plan, event.Plan,
// which is what travels in plan.proposed. The authoring syntax may grow
// (new shorthands, new formats) without changing the protocol; the wire
// form changes only in bus/event.
//
// A plan file is YAML or JSON in one of three formats.
//
// Flat: a goal and a list of steps.
//
//	goal: Build and test
//	steps:
//	  - id: build
//	    run: make
//	  - id: test
//	    run: make test
//	    depends_on: [build]
//	    timeout: 5m          # Go duration, or a number of seconds
//	    retries: 2           # backoff defaults to 1s when retries > 0
//	    on_failure: retry    # abort (default) | retry | continue
//
// Hierarchical: subgoals holding steps, optionally mixed with top-level
// steps. A subgoal's depends_on names other subgoals (or steps); a step's
// depends_on names steps in any subgoal, or subgoals. Step and subgoal ids
// share one namespace and are unique across the plan.
//
//	subgoals:
//	  - id: setup
//	    steps: [{id: fetch, run: git pull}]
//	  - id: ship
//	    depends_on: [setup]
//	    steps: [{id: deploy, run: ./deploy.sh}]
//
// Seed: the format LLM prompts produce. Entry N becomes subgoal "sN" and
// its commands the shell steps "sN.1", "sN.2", … which run in order; the
// entries run in order too.
//
//	{"mode": "plan", "steps": [{"goal": "…", "commands": ["…", "…"]}]}
//
// Step fields: id, title, kind (shell | noop | file.write | file.patch |
// critique), run, depends_on, timeout, retries, backoff, idempotent,
// creates, check, on_failure, env, cwd, capabilities (a list, or one
// name: what the executor must offer, all of it — capabilities: [docker];
// names of letters, digits, '-' and '_'), path, content, mode, patch,
// compensate, run_as, next, tests, target, criteria. YAML anchors, aliases
// and merge keys (<<) work.
//
// Branches and hypotheses (a debugging playbook; see branch.go): a step's
// next routes the run by its outcome (next: [{on: failure, to: diagnose}]),
// the plan's hypotheses ([{id, statement}]) are what it tests, and a
// step's tests names the hypotheses its result is evidence for.
//
// Git runs (see git.go): a plan's git block (repo or url, forge, base,
// branch, push, pull_request) makes its steps work in a worktree on a
// branch of their own; Normalize adds the steps git-worktree and
// git-finish around them and marks every step worktree.
//
// Critique steps (kind: critique) run nothing: a model judges whether the
// output of the step named by target meets criteria (see critique.go).
// target must name another step, not a critique; the critique depends on
// it (Normalize adds the dependency); criteria is not empty; a critique
// has none of the fields of a step that runs (run, guards, cwd, env,
// capabilities, timeout, idempotent, file edits, compensate, run_as).
//
// File edits: a file.write step writes content to path (relative to cwd;
// mode, octal as chmod reads it, for a file it creates — 0644 by
// default); a file.patch step applies patch, a unified diff (git diff or
// diff -u) whose names are relative to cwd. The executor keeps their
// before-images, so a failed run can be compensated.
//
//	steps:
//	  - id: conf
//	    path: etc/app.conf     # kind file.write is inferred from path
//	    content: "port = 8080\n"
//	    mode: 0600
//	  - id: tweak
//	    patch: |               # kind file.patch is inferred from patch
//	      --- a/etc/app.conf
//	      +++ b/etc/app.conf
//	      @@ -1 +1 @@
//	      -port = 8080
//	      +port = 9090
//
// A file edit has no run, guard (creates, check), compensate or run_as;
// its patch must parse (fileedit.ParsePatch); a relative path (path, or
// a name in the patch) may not leave cwd with ".."; content and patch
// are at most MaxEditBytes each and MaxPlanEditBytes for the whole plan,
// so that the plan fits the event it travels in. A shell step may give compensate,
// the command that undoes it when the run fails or is cancelled after it
// succeeded, and run_as, the user it runs as (a user name or uid).
//
// Invariants of an event.Plan returned by Parse or given by Normalize:
//
//  1. It is valid: Validate returns nil. Ids are unique and follow the
//     protocol's grammar (event.ValidStepID: 1–64 bytes of [A-Za-z0-9_-]
//     parts joined by single dots, so never "." or ".."); every dependency
//     names a step; there is no cycle; every subgoal has steps; the limits
//     (MaxSteps, MaxCommandBytes, …) hold.
//  2. Defaults are filled: Kind is shell when the step has run,
//     file.patch when it has patch, file.write when it has path or
//     content, and noop otherwise; OnFailure is abort; Backoff is
//     DefaultBackoff when Retries > 0 and no backoff was given. File edits
//     are Idempotent (applying one again changes nothing) and a Mode is
//     written with four octal digits ("0600"). Capabilities are sorted,
//     each once (nil when none).
//  3. Dependencies are step ids only. A subgoal dependency "A depends on
//     B" becomes edges from A's entry steps (no dependency inside A) to
//     B's exit steps (nothing inside B depends on them); a dependency on a
//     subgoal becomes dependencies on its exit steps. Transitively every
//     step of A still waits for every step of B, with far fewer edges.
//     DependsOn is deduplicated: direct step references in declaration
//     order, then those expanded from subgoal references.
//  4. Steps are in topological order, stable: among steps whose
//     dependencies are met together, declaration order wins.
//  5. Normalize is idempotent: normalizing a normalized plan changes
//     nothing.
//
// Problems are reported all at once (up to MaxProblems) as an *Error that
// wraps ErrInvalid, one located problem per line:
//
//	plan.yaml:12:5: steps[2].depends_on[0]: unknown step "bulid" (did you mean "build"?)
//	plan.yaml:20:17: steps[4].depends_on: cycle: test -> lint -> test
//
// In a cycle, "a -> b" reads "a depends on b".
//
// Usage:
//
//	p, err := plan.Parse("plan.yaml", data)
//	var perr *plan.Error
//	if errors.As(err, &perr) {
//		for _, pr := range perr.Problems { fmt.Println(pr) }
//	}
//
// A plan built in code (an LLM planner) goes through plan.Normalize(p),
// which applies the same checks and fills the same defaults.
//
// Durations are written as Go durations ("90s", "1m30s") or whole seconds
// (90); in the event.Plan they are event.Duration, which travels as a Go
// duration string ("1m30s"). A timeout is at most MaxTimeout (24h), a
// backoff at most MaxBackoff (5m, the orchestrator's cap on retry delays).
//
// Text fields given blank are refused rather than read as absent: run: ""
// and run: "  " both say "run is empty" (a noop step leaves run out), and
// so do blank check, creates and cwd. A file must be UTF-8 (a UTF-8 BOM is
// dropped); a UTF-16 or UTF-32 byte-order mark, NUL bytes or invalid UTF-8
// are refused with the encoding named. No string of the plan may hold what
// looks like a secret by the rule signing applies (redact.FindMember: an
// env entry is judged as NAME=value, any other field as field=value), so a
// plan that passes here is never refused for a secret when its events are
// signed.
package plan
