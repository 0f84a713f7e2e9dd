package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// DataFormat is the layout version of a node's data directory: which
// stores live where (ledger/, outbox/, executor/, nats/, keys). It is
// written to DATA/FORMAT and checked before anything else opens, so that an
// agentd never opens a directory laid out by a newer version (a rollback
// after an upgrade that moved things) and an older layout is upgraded in
// one known place. Each store also pins its own format (ledger meta/format,
// Pebble's format major version).
const DataFormat = 1

// FormatFile is the name of the layout version file in the data directory.
const FormatFile = "FORMAT"

const formatPrefix = "agentic-data "

// ErrDataFormat: the data directory was laid out by another version.
var ErrDataFormat = errors.New("node: unsupported data directory layout")

// checkDataDir reads DATA/FORMAT. A directory without it is new, or was
// written before the file existed (layout 1): the file is written. A newer
// layout is refused with the way out; an older one would be upgraded here.
func checkDataDir(dir string) error {
	path := filepath.Join(dir, FormatFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return writeDataFormat(path)
	case err != nil:
		return fmt.Errorf("node: read %s: %w", path, err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(b), formatPrefix)))
	if !strings.HasPrefix(string(b), formatPrefix) || err != nil {
		return fmt.Errorf("%w: %s does not hold a layout version (%q); is this an agentd data directory?", ErrDataFormat, path, strings.TrimSpace(string(b)))
	}
	switch {
	case v > DataFormat:
		return fmt.Errorf("%w: %s has layout %d, this agentd reads layouts up to %d: run the newer agentd that wrote it, or restore the backup taken before that upgrade", ErrDataFormat, dir, v, DataFormat)
	case v < 1:
		return fmt.Errorf("%w: %s has layout %d, which no agentd wrote", ErrDataFormat, path, v)
	}
	// v == DataFormat: nothing to upgrade yet.
	return nil
}

func writeDataFormat(path string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(formatPrefix+strconv.Itoa(DataFormat)+"\n"), 0o600); err != nil {
		return fmt.Errorf("node: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("node: write %s: %w", path, err)
	}
	return nil
}

// LockFile is the name of the file in the data directory that one agentd
// holds locked (flock) while it runs; it holds that agentd's pid.
const LockFile = "LOCK"

// ErrDataDirInUse: another agentd runs on the data directory.
var ErrDataDirInUse = errors.New("node: data dir in use")

// dataLock is a held lock on DATA/LOCK. The kernel releases it when the
// process ends, however it ends: a LOCK file left by a kill -9 blocks
// nothing.
type dataLock struct{ f *os.File }

// lockDataDir takes the exclusive lock on dir/LOCK without waiting and
// writes the pid into the file; a directory locked by another agentd (or
// another Node in this process) is refused with the holder's pid.
func lockDataDir(dir string) (*dataLock, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("node: lock %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		b, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(b))
			if pid == "" {
				pid = "unknown"
			}
			return nil, fmt.Errorf("%w: data dir %s is in use by agentd pid %s (lock %s)", ErrDataDirInUse, dir, pid, path)
		}
		return nil, fmt.Errorf("node: lock %s: %w", path, err)
	}
	if err := writePid(f); err != nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
		return nil, fmt.Errorf("node: lock %s: %w", path, err)
	}
	return &dataLock{f: f}, nil
}

func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// release empties the pid and drops the lock. The file stays: removing it
// would let a third agentd lock a new file while a second still waits on
// the old one.
func (l *dataLock) release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := errors.Join(l.f.Truncate(0), syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN), l.f.Close())
	l.f = nil
	if err != nil {
		return fmt.Errorf("node: release data dir lock: %w", err)
	}
	return nil
}
