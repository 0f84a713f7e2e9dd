// Package runner runs one executor step — a shell script or a noop — and
// reports a Result shaped for event.TaskFinishedData.
//
// Invariants:
//
//  1. A step runs in its own process group: /bin/sh -c script, forked
//     and exec'd by the runner as the group's leader (one process, as a
//     shell would start it; $$ is the group). Timeout and cancellation
//     signal the whole group (SIGTERM, then SIGKILL after
//     Options.KillGrace), and so does the end of the script: background
//     processes it left behind are stopped too. Run returns only once the
//     group is empty.
//  2. No step process outlives its executor, even one killed with kill -9:
//     the step's shell has the parent-death signal (Pdeathsig, SIGKILL),
//     and a guard process — one per executor process, listing the running
//     groups it is told of through a pipe — kills every listed group when
//     the pipe closes, which the kernel does when the executor dies (see
//     groupGuard). The fork happens on an OS thread locked for the child's
//     lifetime, because Linux ties the parent-death signal to the forking
//     thread (see start). Processes that leave the group themselves
//     (setsid, a daemon that double-forks) are out of reach.
//  3. Output is read continuously through pipes and memory stays bounded
//     whatever the step writes: only the last Options.TailBytes are kept,
//     the rest is streamed to onOutput and forgotten. A slow onOutput loses
//     chunks (with a notice), never blocks the step.
//  4. Every byte of output that leaves the runner is redacted (Redact):
//     streamed chunks line by line, the tail once more as a whole.
//  5. The step sees only the executor's variables on an allowlist
//     (Options.EnvAllow, DefaultEnvAllow) plus Spec.Env; the executor's
//     own secrets are not passed on.
//  6. A noop step returns at once, without forking or allocating.
//  7. A step runs as Spec.RunAs, else Options.RunAs, else the executor's
//     user; with Options.RefuseRoot an executor running as root never
//     runs a step as root unless Options.RunAs names root (class policy
//     otherwise). Options.Limits (open files, address space) are set, soft
//     and hard, by the step's shell before its script (see Limits).
//  8. With Options.Landlock, a step with a WriteScope runs confined by
//     Landlock to writing beneath the scope (where the kernel offers it):
//     it is started through the executor's own binary, executed again as
//     a helper that restricts itself and executes /bin/sh in place (see
//     landlock_linux.go); a helper that cannot confine fails the step.
//  9. AsUser runs a function as a step's user would act on files — the
//     user Run would run the step as, refused alike — on an OS thread of
//     its own with the user's file system ids and groups, which ends with
//     it: the executor's file edits are made that way.
//
// Redaction of a stream is line-based: a secret is recognised when its whole
// line is seen in one piece. An unterminated line is held back until its
// newline, but at most 8 KiB and at most 250ms of silence from the step (so
// progress lines and prompts still stream). A secret in a longer line, or
// written in two pieces with a pause between them, can be split and escape
// the stream redaction; the tail is redacted again as a whole, the streamed
// chunks cannot be. Private-key blocks are tracked across chunks (unless
// their BEGIN line itself is split that way). The patterns are heuristics: a
// secret in an unknown format passes through.
//
// Example:
//
//	res := runner.Run(ctx, runner.Spec{
//		Kind:    event.KindShell,
//		Command: "make test",
//		Cwd:     "/srv/app",
//		Timeout: 10 * time.Minute,
//		Creates: "build/ok",
//	}, runner.Options{}, func(pid int) { /* emit task.started */ },
//		func(stream string, chunk []byte) { /* publish to agentic.log.<run>.<step> */ })
//	if res.Status != event.TaskSucceeded { log.Print(res.Error, res.OutputTail) }
package runner
