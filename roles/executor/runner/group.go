package runner

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"syscall"
	"time"
)

// groupAlive reports whether process group pgid still has a live member.
//
// kill(-pgid, 0) answers cheaply when the group is empty, but it counts
// zombies: a step's orphans are reparented to init (or to the nearest
// subreaper), which may reap them late — or never, when the executor itself
// runs as PID 1 of a container without an init. A zombie holds no files and
// runs nothing, so when kill says "alive" the members are confirmed in
// /proc, ignoring zombies. Without /proc the kill answer stands.
func groupAlive(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	live, ok := liveMember(pgid)
	return live || !ok
}

// liveMember scans /proc for a non-zombie process in group pgid; ok is
// false when /proc cannot be read.
func liveMember(pgid int) (live, ok bool) {
	d, err := os.Open("/proc")
	if err != nil {
		return false, false
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, false
	}
	buf := make([]byte, 512)
	for _, name := range names {
		if name[0] < '1' || name[0] > '9' {
			continue
		}
		state, pg, ok := readStat(name, buf)
		if ok && pg == pgid && state != 'Z' && state != 'X' {
			return true, true
		}
	}
	return false, true
}

// readStat reads the state and process group of /proc/<pid>/stat.
func readStat(pid string, buf []byte) (state byte, pgrp int, ok bool) {
	f, err := os.Open("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0, false
	}
	n, _ := f.Read(buf)
	f.Close()
	b := buf[:n]
	// pid (comm) state ppid pgrp ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 3 || len(fields[0]) != 1 {
		return 0, 0, false
	}
	pgrp, err = strconv.Atoi(string(fields[2]))
	return fields[0][0], pgrp, err == nil
}

// stopGroup ends every process of group pgid: SIGTERM, then SIGKILL after
// grace if any is left. While a member lives, Linux does not reuse the
// number pgid for another process, so signalling the group after its
// leader was reaped is safe. It gives up after a further second if members
// survive SIGKILL (a process stuck in uninterruptible sleep). leaderDone
// is closed once the group's leader, the runner's child, has exited and
// been reaped.
func stopGroup(pgid int, grace time.Duration, leaderDone <-chan struct{}) {
	if !groupAlive(pgid) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	if waitGone(pgid, grace, leaderDone) {
		return
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	waitGone(pgid, time.Second, leaderDone)
}

// waitGone waits until group pgid is empty or d has passed. The leader's
// exit is an event (leaderDone); the other members are not the runner's
// children and give none, so once the leader is gone — or while it lives
// on past a signal — the group is polled, at first often and then every
// 20ms.
func waitGone(pgid int, d time.Duration, leaderDone <-chan struct{}) bool {
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	select {
	case <-leaderDone:
	case <-deadline.C:
		return !groupAlive(pgid)
	}
	pause := time.Millisecond
	for groupAlive(pgid) {
		t := time.NewTimer(pause)
		select {
		case <-deadline.C:
			t.Stop()
			return !groupAlive(pgid)
		case <-t.C:
		}
		pause = min(2*pause, 20*time.Millisecond)
	}
	return true
}
