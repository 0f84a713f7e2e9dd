package fileedit

import (
	"crypto/rand"
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
	l, err := s.blobLoc(h)
	return l.String(), err
}

func (s *Store) blobLoc(h string) (loc, error) {
	x, ok := strings.CutPrefix(h, "sha256:")
	if !ok || len(x) != 64 {
		return loc{}, fmt.Errorf("content hash %q: want sha256:<64 hex digits>", h)
	}
	if _, err := hex.DecodeString(x); err != nil {
		return loc{}, fmt.Errorf("content hash %q: want sha256:<64 hex digits>", h)
	}
	return loc{Dir: filepath.Join(s.dir, "blobs"), Rel: x}, nil
}

// putBlob stores b under its hash, durably; a blob already there is kept.
func (s *Store) putBlob(b []byte) (string, error) {
	h := Hash(b)
	l, err := s.blobLoc(h)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(l.String()); err == nil {
		return h, nil
	}
	if err := writeAtomic(l, b, 0o600, nil); err != nil {
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

func (s *Store) journalLoc(key string) loc {
	sum := sha256.Sum256([]byte(key))
	return loc{Dir: filepath.Join(s.dir, "edits"), Rel: hex.EncodeToString(sum[:]) + ".json"}
}

// journal reads the entry of key; an empty one when there is none.
func (s *Store) journal(key string) (journal, error) {
	b, err := os.ReadFile(s.journalLoc(key).String())
	if errors.Is(err, fs.ErrNotExist) {
		return journal{Key: key}, nil
	}
	if err != nil {
		return journal{}, fmt.Errorf("read the journal of edit %q: %w", key, err)
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil || j.Key != key {
		return journal{}, fmt.Errorf("journal of edit %q is corrupt (%s)", key, s.journalLoc(key))
	}
	return j, nil
}

func (s *Store) putJournal(j journal) error {
	b, err := json.Marshal(j)
	if err != nil {
		return fmt.Errorf("encode the journal of edit %q: %w", j.Key, err)
	}
	if err := writeAtomic(s.journalLoc(j.Key), b, 0o600, nil); err != nil {
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

// loc is a file as the edit operations reach it: Rel beneath the
// directory Dir, through an os.Root, so that no operation leaves Dir even
// if a directory on the way is swapped for a symlink after the path was
// checked.
type loc struct {
	Dir, Rel string
}

// String is the file's path, for messages.
func (l loc) String() string { return filepath.Join(l.Dir, l.Rel) }

// read reads the file at l (not following a symlink), bounded by max.
func read(l loc, max int64) (state, error) {
	r, err := os.OpenRoot(l.Dir)
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", l, err)
	}
	defer r.Close()
	f, err := r.OpenFile(l.Rel, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return state{}, nil
	}
	if err != nil {
		if fi, lerr := r.Lstat(l.Rel); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return state{}, fmt.Errorf("%s is a symlink: %w", l, ErrUnsafePath)
		}
		return state{}, fmt.Errorf("read %s: %w", l, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", l, err)
	}
	if !fi.Mode().IsRegular() {
		return state{}, fmt.Errorf("%s is not a regular file (%s): %w", l, kindOf(fi.Mode()), ErrUnsafePath)
	}
	if fi.Size() > max {
		return state{}, fmt.Errorf("%s is %d bytes; the limit for an edit is %d", l, fi.Size(), max)
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return state{}, fmt.Errorf("read %s: %w", l, err)
	}
	if int64(len(b)) > max {
		return state{}, fmt.Errorf("%s is more than %d bytes, the limit for an edit", l, max)
	}
	st := state{exists: true, content: b, mode: fi.Mode().Perm(), uid: -1, gid: -1}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.uid, st.gid = int(sys.Uid), int(sys.Gid)
	}
	return st, nil
}

// owner is a file's owner to keep.
type owner struct{ uid, gid int }

// keepOwner gives f (a new file, owned by whoever made it) the owner own,
// when it has another. Only root may give a file away: an edit made as a
// user other than the file's owner fails here (the file keeps its owner,
// and its content) rather than take the file over.
func keepOwner(f *os.File, own owner) error {
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok && int(sys.Uid) == own.uid && int(sys.Gid) == own.gid {
		return nil
	}
	if err := f.Chown(own.uid, own.gid); err != nil {
		return fmt.Errorf("keep the file's owner (uid %d, gid %d): %w", own.uid, own.gid, err)
	}
	return nil
}

// writeAtomic replaces the file at l with b: a temporary file beside it,
// synced, given mode (and owner, when given), renamed over it; then the
// directory is synced.
func writeAtomic(l loc, b []byte, mode fs.FileMode, own *owner) (err error) {
	r, err := os.OpenRoot(l.Dir)
	if err != nil {
		return fmt.Errorf("write %s: %w", l, err)
	}
	defer r.Close()
	var rnd [8]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		return fmt.Errorf("write %s: %w", l, err)
	}
	dir := filepath.Dir(l.Rel)
	tmp := filepath.Join(dir, ".agentic-edit-"+hex.EncodeToString(rnd[:]))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", l, err)
	}
	defer func() {
		if err != nil {
			_ = r.Remove(tmp)
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Chmod(mode)
	}
	if err == nil && own != nil {
		err = keepOwner(f, *own)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", l, err)
	}
	if err = r.Rename(tmp, l.Rel); err != nil {
		return fmt.Errorf("write %s: %w", l, err)
	}
	return syncDir(r, dir, l)
}

// remove deletes the file at l and syncs its directory; a missing file
// is no error.
func remove(l loc) error {
	r, err := os.OpenRoot(l.Dir)
	if err != nil {
		return fmt.Errorf("delete %s: %w", l, err)
	}
	defer r.Close()
	if err := r.Remove(l.Rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", l, err)
	}
	return syncDir(r, filepath.Dir(l.Rel), l)
}

// syncDir syncs dir, beneath r, after a change to l.
func syncDir(r *os.Root, dir string, l loc) error {
	d, err := r.Open(dir)
	if err != nil {
		return fmt.Errorf("sync the directory of %s: %w", l, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync the directory of %s: %w", l, err)
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
