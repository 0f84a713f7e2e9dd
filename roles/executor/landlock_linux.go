package executor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// landlockStatus says whether Landlock confines steps, for the startup
// line: it does not — the executor does not apply a Landlock ruleset yet —
// and whether the kernel would offer it.
func landlockStatus() string {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return fmt.Sprintf("not active: the kernel offers no Landlock (%v)", errno)
	}
	return fmt.Sprintf("not active: the kernel offers Landlock ABI %d, but the executor does not apply it yet "+
		"(the file scope is enforced by the policy's verdicts and the working-directory check)", abi)
}
