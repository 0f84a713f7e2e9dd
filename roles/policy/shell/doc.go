// Package shell reads a shell command the way a shell would, without
// running anything, and lists every simple command it would run: the
// commands of pipes, lists, subshells, brace groups, loops, functions and
// substitutions ($(…), `…`, <(…)); the strings given to sh -c, eval, su -c,
// ssh, watch and trap, parsed recursively; the programs run by wrappers
// (sudo, env, xargs, nice, timeout, nohup, stdbuf, command, exec,
// busybox…) and by find -exec. It uses mvdan.cc/sh/v3's parser.
//
// Invariants:
//
//  1. Parse never fails and never drops a command: what cannot be parsed
//     or resolved statically is returned as a Command with Opaque set and
//     the reason (a program name from a variable or substitution, ${IFS},
//     a glob in the program position, a script read from a pipe or a
//     process substitution, inline interpreter code, eval of a variable,
//     LD_PRELOAD and similar assignments).
//  2. Words are resolved as the shell resolves them: quotes and
//     backslashes removed, $'…' decoded, braces expanded, so \rm, r""m,
//     'rm', /usr/bin/../bin/rm and {rm,-rf,/} name rm.
//  3. Options are read with what is known of each program: combined short
//     flags are split (-rf is -r and -f), long spellings map to one
//     canonical name (--recursive and -R are rm's -r), so a rule names a
//     flag once.
//  4. Parse is pure and deterministic: the same text gives the same
//     commands, in source order.
//  5. Inline code is found whatever options come before it (python3 -W
//     ignore -c, perl -Mstrict -e, node -r fs -e, deno eval), and the
//     command strings of flock -c, git -c core.pager, gdb -ex shell, sed's
//     e command, zip -TT and parallel are parsed as sh -c strings are.
//  6. A command's Effects name what it does to data whatever the
//     spelling: RecursiveDelete (rm -r, find -delete, rsync --delete…)
//     and Wipe (truncation, dd of=, mv to /dev/null, chmod -R 000).
//
// Usage:
//
//	for _, c := range shell.Parse(`sudo rm -rf /var/www`) {
//		fmt.Println(c.Program, c.Via, c.Flags, c.Opaque)
//	}
//	// sudo [] [] ""
//	// rm [sudo] [{-r -rf} {-f -rf}] ""
package shell
