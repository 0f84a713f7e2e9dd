package runner

import (
	"fmt"
	"os"
	"os/user"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// currentUser is the executor's user name, looked up once.
var currentUser = sync.OnceValue(func() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if name := os.Getenv("USER"); name != "" {
		return name
	}
	return strconv.Itoa(os.Getuid())
})

// account is the user a step runs as.
type account struct {
	name string
	home string
	// cred switches the step's processes to the user; nil runs them as
	// the executor's own user.
	cred *syscall.Credential
}

// runAsError is a step the runner will not run as the user it asks for.
type runAsError struct {
	class event.FailureClass
	msg   string
}

func (e *runAsError) Error() string { return e.msg }

// geteuid is the executor's effective user id (a variable for tests).
var geteuid = os.Geteuid

// resolveAccount decides whom a step runs as: the step's RunAs, else
// Options.RunAs, else the executor's own user. When the executor runs as
// root and Options.RefuseRoot is set, a step runs as root only when
// Options.RunAs names root (the operator's choice for this machine): one
// that would run as root by default, or that asks for root itself, is
// refused (class policy). Switching to another user needs root.
func resolveAccount(spec Spec, opts Options) (account, error) {
	euid := geteuid()
	name, fromStep := spec.RunAs, spec.RunAs != ""
	if name == "" {
		name = opts.RunAs
	}
	if name == "" {
		if euid == 0 && opts.RefuseRoot {
			return account{}, &runAsError{event.ClassPolicy,
				"refusing to run the step as root: agentd runs as root and no user is configured for steps " +
					"(set executor.run_as to an unprivileged user, or to root to run steps as root on purpose)"}
		}
		return account{name: currentUser()}, nil
	}
	// One look at the user files serves the lookups of this step.
	stamp, now := userStamp(), time.Now()
	u, err := lookupUserAt(name, stamp, now)
	if err != nil {
		return account{}, &runAsError{event.ClassLogic, fmt.Sprintf("run as %s: %v", name, err)}
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return account{}, &runAsError{event.ClassLogic, fmt.Sprintf("run as %s: uid %s gid %s are not numbers", name, u.Uid, u.Gid)}
	}
	if uid == 0 && fromStep && opts.RefuseRoot {
		if o, err := lookupUserAt(opts.RunAs, stamp, now); opts.RunAs == "" || err != nil || o.Uid != "0" {
			return account{}, &runAsError{event.ClassPolicy, fmt.Sprintf(
				"refusing to run the step as %s (root): a step may run as root only on an executor whose executor.run_as is root", name)}
		}
	}
	if int(uid) == euid {
		return account{name: u.Username}, nil
	}
	if euid != 0 {
		return account{}, &runAsError{event.ClassLogic, fmt.Sprintf(
			"cannot run as %s: the executor runs as %s, not root, and cannot switch users", name, currentUser())}
	}
	cred := &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	if ids, err := userGroupsAt(u, stamp, now); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				cred.Groups = append(cred.Groups, uint32(n))
			}
		}
	}
	if cred.Groups == nil {
		cred.Groups = []uint32{uint32(gid)} // drop root's supplementary groups
	}
	return account{name: u.Username, home: u.HomeDir, cred: cred}, nil
}

// userCacheTTL bounds how long a user found is reused without looking
// again, for user databases that are not files (NSS sources other than
// files, in builds with cgo).
const userCacheTTL = 10 * time.Second

// userFiles are the user database files a lookup reads (without cgo, the
// only source): a user found is reused while they are unchanged.
var userFiles = [2]string{"/etc/passwd", "/etc/group"}

// users keeps the users lookupUser found, by name, and their groups,
// with the state of userFiles they were read at.
var users struct {
	sync.Mutex
	stamp [2]fileStamp
	found map[string]foundUser
	// groups are the users' supplementary groups (userGroups), by user
	// name, uid and gid.
	groups map[string]foundGroups
}

type foundGroups struct {
	ids []string
	at  time.Time
}

type foundUser struct {
	u  user.User
	at time.Time
}

// fileStamp identifies a version of a file: a write, a rename over it or
// a metadata change gives another stamp.
type fileStamp struct {
	dev, ino     uint64
	size         int64
	mtime, ctime syscall.Timespec
	ok           bool
}

// statUserFile is stampOf for the user database files (a variable for
// tests).
var statUserFile = stampOf

// userStamp is the state of userFiles now.
func userStamp() [2]fileStamp {
	return [2]fileStamp{statUserFile(userFiles[0]), statUserFile(userFiles[1])}
}

func stampOf(path string) fileStamp {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return fileStamp{}
	}
	return fileStamp{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim, ctime: st.Ctim, ok: true}
}

// lookupUser finds a user by name or by numeric id. A user found is
// looked up again once the user database files change (or after
// userCacheTTL): every step would otherwise read and parse them.
func lookupUser(name string) (*user.User, error) {
	return lookupUserAt(name, userStamp(), time.Now())
}

// lookupUserAt is lookupUser with the user files' state and the time
// already read (one step's lookups share them).
func lookupUserAt(name string, stamp [2]fileStamp, now time.Time) (*user.User, error) {
	users.Lock()
	if users.stamp != stamp {
		users.stamp, users.found, users.groups = stamp, nil, nil
	}
	f, ok := users.found[name]
	users.Unlock()
	if ok && now.Sub(f.at) < userCacheTTL && stamp[0].ok {
		u := f.u
		return &u, nil
	}
	u, err := lookupUserAgain(name)
	if err != nil {
		return nil, err
	}
	users.Lock()
	if users.stamp == stamp {
		if users.found == nil {
			users.found = map[string]foundUser{}
		}
		users.found[name] = foundUser{u: *u, at: now}
	}
	users.Unlock()
	return u, nil
}

// lookupUserAgain is lookupUser without the cache (a variable for tests).
var lookupUserAgain = lookupUserUncached

func lookupUserUncached(name string) (*user.User, error) {
	u, err := user.Lookup(name)
	if err == nil {
		return u, nil
	}
	if _, nerr := strconv.ParseUint(name, 10, 32); nerr == nil {
		if u, ierr := user.LookupId(name); ierr == nil {
			return u, nil
		}
	}
	return nil, fmt.Errorf("no such user (%w)", err)
}

// groupIDsAgain reads a user's supplementary groups (a variable for
// tests).
var groupIDsAgain = (*user.User).GroupIds

// userGroups is u's supplementary group ids, read again once the user
// database files change (or after userCacheTTL), as lookupUser's users
// are: each step would otherwise open and read /etc/group. A failed read
// is not kept.
func userGroups(u *user.User) ([]string, error) {
	return userGroupsAt(u, userStamp(), time.Now())
}

// userGroupsAt is userGroups with the user files' state and the time
// already read.
func userGroupsAt(u *user.User, stamp [2]fileStamp, now time.Time) ([]string, error) {
	key := u.Username + "\x00" + u.Uid + "\x00" + u.Gid
	users.Lock()
	if users.stamp != stamp {
		users.stamp, users.found, users.groups = stamp, nil, nil
	}
	g, ok := users.groups[key]
	users.Unlock()
	if ok && now.Sub(g.at) < userCacheTTL && stamp[1].ok {
		return slices.Clone(g.ids), nil
	}
	ids, err := groupIDsAgain(u)
	if err != nil {
		return nil, err
	}
	users.Lock()
	if users.stamp == stamp {
		if users.groups == nil {
			users.groups = map[string]foundGroups{}
		}
		users.groups[key] = foundGroups{ids: slices.Clone(ids), at: now}
	}
	users.Unlock()
	return ids, nil
}
