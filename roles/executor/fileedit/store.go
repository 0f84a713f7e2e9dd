package fileedit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentic-dev/agentic/bus/event"
)

// Store keeps before-images and the journal of applied edits in a
// directory. It holds no state in memory: several Stores on one
// directory, in one process or after a restart, see the same edits.
type Store struct {
	dir string
}

// Open makes (if needed) and opens the store in dir.
func Open(dir string) (*Store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "blobs"), filepath.Join(dir, "edits")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("fileedit: open store: %w", err)
		}
	}
	return &Store{dir: dir}, nil
}

// Hash is the content hash a FileEdit records: "sha256:<hex>".
func Hash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// blobPath is where the content of hash h is kept.
func (s *Store) blobPath(h string) (string, error) {
	x, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(x) != 64 {
		return "", fmt.Errorf("content hash %q: want sha256:<64 hex digits>", h)
	}
	if _, err := hex.DecodeString(x); err != nil {
		return "", fmt.Errorf("content hash %q: want sha256:<64 hex digits>", h)
	}
	return filepath.Join(s.dir, "blobs", x), nil
}

// putBlob stores b under its hash, durably; a blob already there is kept.
func (s *Store) putBlob(b []byte) (string, error) {
	h := Hash(b)
	p, err := s.blobPath(h)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(p); err == nil {
		return h, nil
	}
	if err := writeAtomic(p, b, 0o600, nil); err != nil {
		return "", fmt.Errorf("store before-image: %w", err)
	}
	return h, nil
}

// blob reads the content of hash h and checks it.
func (s *Store) blob(h string) ([]byte, error) {
	p, err := s.blobPath(h)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("before-image %s is not in the store %s (was the edit applied by this node?)", h, s.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("read before-image %s: %w", h, err)
	}
	if Hash(b) != h {
		return nil, fmt.Errorf("before-image %s in the store is corrupt (its content hashes to %s)", h, Hash(b))
	}
	return b, nil
}

// journal is what the store remembers of one edit.
type journal struct {
	Key string `json:"key"`
	// Spec is the hash of the edit last applied under Key (Edit.spec).
	Spec  string           `json:"spec"`
	Edits []event.FileEdit `json:"edits"`
}

func (s *Store) journalPath(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(s.dir, "edits", hex.EncodeToString(sum[:])+".json")
}

// journal reads the entry of key; an empty one when there is none.
func (s *Store) journal(key string) (journal, error) {
	b, err := os.ReadFile(s.journalPath(key))
	if errors.Is(err, fs.ErrNotExist) {
		return journal{Key: key}, nil
	}
	if err != nil {
		return journal{}, fmt.Errorf("read the journal of edit %q: %w", key, err)
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil || j.Key != key {
		return journal{}, fmt.Errorf("journal of edit %q is corrupt (%s)", key, s.journalPath(key))
	}
	return j, nil
}

func (s *Store) putJournal(j journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode the journal of edit %q: %w", j.Key, err)
	}
	if err := writeAtomic(s.journalPath(j.Key), b, 0o600, nil); err != nil {
		return fmt.Errorf("record edit %q: %w", j.Key, err)
	}
	return nil
}

// state is a file as an edit finds it.
type state struct {
	exists  bool
	content []byte
	mode    fs.FileMode
	uid     int
	gid     int
}

func (st state) hash() string {
	if !st.exists {
		return event.FileAbsent
	}
	return Hash(st.content)
}

// read reads the file at p (resolved: not a symlink), bounded by max.
func read(p string, max int64) (state, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return state{}, fmt.Errorf("%s is not a regular file (%s): %w", p, kindOf(fi.Mode()), ErrUnsafePath)
	}
	if fi.Size() > max {
		return state{}, fmt.Errorf("%s is %d bytes; the limit for an edit is %d", p, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", p, err)
	}
	if int64(len(b)) > max {
		return state{}, fmt.Errorf("%s is more than %d bytes, the limit for an edit", p, max)
	}
	st := state{exists: true, content: b, mode: fi.Mode().Perm(), uid: -1, gid: -1}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.uid, st.gid = int(sys.Uid), int(sys.Gid)
	}
	return st, nil
}

// owner is a file's owner to keep, when the process may set it.
type owner struct{ uid, gid int }

// writeAtomic replaces p with b: a temporary file in p's directory,
// synced, given mode (and owner, when given), renamed over p; then the
// directory is synced.
func writeAtomic(p string, b []byte, mode fs.FileMode, own *owner) (err error) {
	dir := filepath.Dir(p)
	f, err := os.CreateTemp(dir, ".agentic-edit-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			_ = os.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Chmod(mode)
	}
	if err == nil && own != nil {
		err = f.Chown(own.uid, own.gid)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err = os.Rename(tmp, p); err != nil {
		return fmt.Errorf("write %s: %w", p, err)
	}
	return syncDir(dir)
}

// remove deletes p and syncs its directory; a missing p is no error.
func remove(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	return syncDir(filepath.Dir(p))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// ParseMode reads a file.write mode: octal permission bits ("0644",
// "644", "0o600"); "" is 0644.
func ParseMode(s string) (fs.FileMode, error) {
	if s == "" {
		return 0o644, nil
	}
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0o"), "0O")
	v, err := strconv.ParseUint(t, 8, 32)
	if err != nil || v > 0o777 || t == "" {
		return 0, fmt.Errorf("mode %q: want octal permission bits such as 0644 (at most 0777)", s)
	}
	return fs.FileMode(v), nil
}

// FormatMode writes permission bits as a FileEdit records them ("0644").
func FormatMode(m fs.FileMode) string { return fmt.Sprintf("%04o", uint32(m.Perm())) }
