package runner

import (
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock confinement. A step confined to a write scope is started
// through a helper: the executor's own binary, executed again with
// sandboxArg0 as its argv[0]. Before any other code of the process runs
// (this package's init, on the main thread), the helper creates a
// Landlock ruleset that handles every kind of write, allows them beneath
// the scope's directories (and to /dev/null and its kind), sets
// no_new_privs, restricts itself and executes /bin/sh -c script. The
// shell and everything it starts inherit the restriction: a write outside
// the scope fails with EACCES, whatever program tries it. Reading and
// executing are not restricted. The helper keeps the step's process id,
// process group, parent-death signal, user and environment.

// sandboxArg0 is the argv[0] that makes a process the helper.
const sandboxArg0 = "agentic-step-sandbox"

// selfExe is the executor's own binary, as its child sees it.
const selfExe = "/proc/self/exe"

func init() {
	if len(os.Args) > 0 && os.Args[0] == sandboxArg0 {
		os.Exit(sandboxMain(os.Args[1:]))
	}
}

// LandlockABI is the Landlock ABI version the kernel offers; 0 when it
// offers none (too old, or disabled).
var LandlockABI = sync.OnceValue(func() int {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0
	}
	return int(abi)
})

// LandlockUnavailable says why Landlock cannot confine steps here, or ""
// when it can.
func LandlockUnavailable() string {
	if LandlockABI() > 0 {
		return ""
	}
	_, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	return fmt.Sprintf("the kernel offers no Landlock (%v)", errno)
}

// sandboxCommand is the argv of the helper running script confined to
// writing beneath dirs.
func sandboxCommand(dirs []string, script string) []string {
	argv := make([]string, 0, len(dirs)+5)
	argv = append(argv, sandboxArg0)
	argv = append(argv, dirs...)
	return append(argv, "--", shellPath, "-c", script)
}

// sandboxMain is the helper: dirs, "--", then the command to execute
// confined. It returns (exit status 126, with a message on stderr) only
// when it cannot confine or execute: the step never runs unconfined.
func sandboxMain(args []string) int {
	i := slices.Index(args, "--")
	if i < 0 || i == len(args)-1 {
		fmt.Fprintln(os.Stderr, "agentic: step sandbox: want DIR... -- COMMAND...")
		return 126
	}
	dirs, argv := args[:i], args[i+1:]
	if err := confine(dirs); err != nil {
		fmt.Fprintf(os.Stderr, "agentic: landlock: %v\n", err)
		return 126
	}
	err := syscall.Exec(argv[0], argv, os.Environ())
	fmt.Fprintf(os.Stderr, "agentic: exec %s: %v\n", argv[0], err)
	return 126
}

// writeAccess are the rights Landlock ABI abi knows that change the file
// system, and those of them that apply to a file (not a directory).
func writeAccess(abi int) (all, file uint64) {
	all = unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR | unix.LANDLOCK_ACCESS_FS_MAKE_REG |
		unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	file = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	if abi >= 2 {
		all |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		all |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
		file |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	return all, file
}

// writableDevices may always be written: writing them changes no file.
var writableDevices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/tty"}

// confine restricts the calling thread — and what it executes — to
// writing beneath dirs.
func confine(dirs []string) error {
	abi := LandlockABI()
	if abi == 0 {
		return errors.New(LandlockUnavailable())
	}
	all, file := writeAccess(abi)
	// Only handled_access_fs: the size every ABI accepts.
	attr := struct{ handledFS uint64 }{all}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return fmt.Errorf("create ruleset: %w", errno)
	}
	defer unix.Close(int(fd))
	for _, d := range append(slices.Clone(dirs), writableDevices...) {
		if err := allowBeneath(int(fd), d, all, file); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("restrict self: %w", errno)
	}
	return nil
}

// allowBeneath allows writes beneath path (a directory) or to it (a
// file). A path that does not exist is skipped: nothing can be written
// beneath it that an allowed parent would not allow.
func allowBeneath(ruleset int, path string, all, file uint64) error {
	pfd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := unix.Fstat(pfd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", path, err)
	}
	rights := all
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights = file
	}
	rule := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(pfd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&rule)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("allow writes beneath %s: %w", path, errno)
	}
	return nil
}

// scopeDirs are the paths Landlock lets a step write beneath for the file
// scope globs: each glob's literal part (up to its first segment holding
// a wildcard), ./ and relative globs taken in cwd, ~ in home. Landlock
// confines to directories, so a glob narrower than a directory
// (/srv/app/*.log) allows its whole directory (/srv/app).
func scopeDirs(globs []string, cwd, home string) []string {
	out := []string{}
	for _, g := range globs {
		var p string
		switch {
		case g == "~" || strings.HasPrefix(g, "~/"):
			if home == "" {
				continue
			}
			p = path.Join(home, g[1:])
		case strings.HasPrefix(g, "/"):
			p = g
		default:
			p = path.Join(cwd, g)
		}
		segs := strings.Split(p, "/")
		n := len(segs)
		for i, s := range segs {
			if strings.ContainsAny(s, `*?[\{`) {
				n = i
				break
			}
		}
		d := path.Clean("/" + strings.Join(segs[:n], "/"))
		out = append(out, d)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
