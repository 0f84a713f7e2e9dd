package runner

import (
	"fmt"
	"strconv"
	"strings"
	"syscall"
)

// Limits are resource limits set in a step's processes (soft and hard
// alike, so the step cannot raise them again). Zero leaves a limit as the
// executor's own. A limit above the executor's own hard limit is lowered
// to it.
//
// They are set by the step's shell itself, before the script: the shell's
// ulimit builtin, run first in the same process (no extra fork or exec),
// so they hold for every process of the step from its start. Only the
// limits every /bin/sh (dash, bash, busybox ash) spells alike are offered:
// open files (ulimit -n) and address space (ulimit -v). A process count
// limit is not: RLIMIT_NPROC counts every process of the user, the
// executor's included, and the shells spell it differently (-u, -p); a
// step's processes are bounded by its process group being killed at its
// end, timeout or cancellation.
type Limits struct {
	// OpenFiles is RLIMIT_NOFILE: the most file descriptors a process of
	// the step may hold.
	OpenFiles uint64
	// AddressSpace is RLIMIT_AS in bytes (rounded down to KiB): the most
	// virtual memory a process of the step may map.
	AddressSpace uint64
}

// IsZero reports whether no limit is set.
func (l Limits) IsZero() bool { return l.OpenFiles == 0 && l.AddressSpace == 0 }

// String describes the limits for logs ("open files 1024, address space
// 4096 MiB", or "none").
func (l Limits) String() string {
	var parts []string
	if l.OpenFiles > 0 {
		parts = append(parts, "open files "+strconv.FormatUint(l.OpenFiles, 10))
	}
	if l.AddressSpace > 0 {
		parts = append(parts, fmt.Sprintf("address space %d MiB", l.AddressSpace>>20))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// getrlimit is syscall.Getrlimit (a variable for tests).
var getrlimit = syscall.Getrlimit

// prefix is the shell text that sets the limits, put before the script on
// its first line (so that line numbers in the shell's messages stay true);
// "" without limits. A limit the shell cannot set ends the step with exit
// status 126 before the script runs.
func (l Limits) prefix() string {
	if l.IsZero() {
		return ""
	}
	var b strings.Builder
	set := func(flag string, v uint64, resource int, unit uint64) {
		var cur syscall.Rlimit
		if getrlimit(resource, &cur) == nil && cur.Max != ^uint64(0) && v > cur.Max {
			v = cur.Max
		}
		fmt.Fprintf(&b, "ulimit %s %d || exit 126; ", flag, v/unit)
	}
	if l.OpenFiles > 0 {
		set("-n", l.OpenFiles, syscall.RLIMIT_NOFILE, 1)
	}
	if l.AddressSpace > 0 {
		set("-v", max(l.AddressSpace, 1024), syscall.RLIMIT_AS, 1024)
	}
	return b.String()
}
