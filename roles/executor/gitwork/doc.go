// Package gitwork keeps the git worktrees of git runs on an executor
// (examples/README.md, "Git runs"): it makes a run's worktree and branch from
// the base, commits each edit step there, pushes the branch at the run's
// end, and discards the worktree and the branch when the run is undone.
//
// It runs git through an Exec the executor gives it — the runner, as the
// step user, with an argument vector and no shell — and adds to every
// call what keeps the repository's and the user's configuration from
// running programs: system and global configuration off
// (GIT_CONFIG_NOSYSTEM, GIT_CONFIG_GLOBAL=/dev/null), hooks off
// (core.hooksPath=/dev/null), no fsmonitor, no ext:: transport, no
// terminal prompt (Args).
//
// Invariants:
//
//  1. The user's checkout is never touched: a run works in a worktree of
//     its own under Dir, on a branch of its own that did not exist
//     before (Create refuses a branch that exists). What the repository
//     gains is that branch and the worktree's administrative entry;
//     Discard removes both, and nothing else.
//  2. Discard deletes only a branch this package made: the run's state
//     file (StateDir/<run>.json, written by the executor, never by the
//     step user) is written only once the branch was found absent,
//     before `git worktree add -b` makes it; Made records that it was.
//  3. Nothing is pushed but the run's branch, by an explicit refspec
//     without '+': a push is never forced, and a push of the base branch
//     (or of a branch named like it) is refused before git runs.
//  4. Every operation may run again after a crash: Create finds the
//     worktree it made (or finishes making it), Commit commits nothing
//     when nothing changed, Discard of what is gone succeeds.
//
// Example (the executor does this):
//
//	w := gitwork.New(gitwork.Config{Dir: work + "/git", StateDir: state + "-git", Git: exec, Name: node})
//	st, err := w.Create(ctx, run, spec, nil)
//	id, err := w.Commit(ctx, run, step, "fix(plan): "+title, trailers)
//	res, err := w.Finish(ctx, run, spec, nil)
package gitwork
