package fileedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrConflict is a file that holds neither what an edit expects to change
// nor its result: someone changed it in between.
var ErrConflict = errors.New("file changed since")

// Edit is the file edit of one file.write or file.patch step.
type Edit struct {
	// Key identifies the edit across attempts ("<run>/<step>"): applying
	// an edit again under the same key is a no-op for the files that hold
	// its result. Apply needs one; DryRun ignores it.
	Key string
	// Kind is event.KindFileWrite or event.KindFilePatch.
	Kind event.StepKind
	// Dir is the step's working directory, absolute.
	Dir string
	// Path, Content and Mode are a file.write's; Patch is a file.patch's.
	Path, Content, Mode, Patch string
}

// FromStep is the edit of step s, run in dir (its working directory,
// resolved), under key.
func FromStep(key string, s event.Step, dir string) Edit {
	return Edit{Key: key, Kind: s.Kind, Dir: dir, Path: s.Path, Content: s.Content, Mode: s.Mode, Patch: s.Patch}
}

// Result is what an edit, a dry run or a restore did (or would do).
type Result struct {
	// Edits lists every file the edit names, in order: its path and
	// content hashes before and after (equal when it already held the
	// result), and the before-image's mode.
	Edits []event.FileEdit
	// Diff is the unified diff of what changed ("" when nothing did),
	// with names relative to the working directory where they are inside
	// it.
	Diff string
	// Changed is false when every file already held the result.
	Changed bool
}

// change is one file's part in an edit.
type change struct {
	path      string // resolved, absolute
	at        loc    // where the operations reach it
	name      string // for people and diffs
	cur, next state
	// before and mode are the before-image recorded for the file: cur's,
	// or an earlier application's when cur is that application's result.
	before, mode string
	// blob, when set, is the hash of the before-image a restore puts
	// back: next.content is read from the store (as the process) once
	// the file was checked (as the user).
	blob string
}

// noop reports whether the file already holds its result.
func (c *change) noop() bool { return c.cur.hash() == c.next.hash() && c.cur.exists == c.next.exists }

// plan works out every file's change without changing anything. prior
// holds the files an earlier application under the same key recorded: a
// file that holds that application's result keeps the before-image
// recorded then (the compensation must go back to before the first
// application), and when the edit is the same as then (same) the file is
// left as it is.
func plan(e Edit, o Options, prior map[string]event.FileEdit, same bool) ([]change, error) {
	mk := func(name string) (change, bool, error) {
		p, at, err := resolve(e.Dir, name, o)
		if err != nil {
			return change{}, false, err
		}
		cur, err := read(at, o.maxBytes())
		if err != nil {
			return change{}, false, err
		}
		c := change{path: p, at: at, name: display(e.Dir, p), cur: cur, before: cur.hash()}
		if cur.exists {
			c.mode = FormatMode(cur.mode)
		}
		k, ok := prior[p]
		ours := ok && k.After == cur.hash()
		if ours {
			c.before, c.mode = k.Before, k.Mode
		}
		return c, ours, nil
	}
	switch e.Kind {
	case event.KindFileWrite:
		if int64(len(e.Content)) > o.maxBytes() {
			return nil, fmt.Errorf("content is %d bytes; the limit for an edit is %d", len(e.Content), o.maxBytes())
		}
		mode, err := ParseMode(e.Mode)
		if err != nil {
			return nil, err
		}
		c, _, err := mk(e.Path)
		if err != nil {
			return nil, err
		}
		c.next = c.cur
		c.next.exists, c.next.content = true, []byte(e.Content)
		if !c.cur.exists {
			c.next.mode, c.next.uid, c.next.gid = mode, -1, -1
		}
		return []change{c}, nil
	case event.KindFilePatch:
		files, err := ParsePatch(e.Patch)
		if err != nil {
			return nil, err
		}
		out := make([]change, 0, len(files))
		seen := map[string]bool{}
		for _, pf := range files {
			c, ours, err := mk(filepath.FromSlash(pf.Path))
			if err != nil {
				return nil, err
			}
			if seen[c.path] {
				return nil, fmt.Errorf("patch changes %s twice (under two names): %w", c.path, ErrBadPatch)
			}
			seen[c.path] = true
			if ours && same {
				c.next = c.cur
			} else if c.next, err = pf.apply(c.cur); err != nil {
				return nil, err
			}
			out = append(out, c)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("kind %q is not a file edit (want %s or %s)", e.Kind, event.KindFileWrite, event.KindFilePatch)
	}
}

// spec identifies what an edit does, for the journal.
func (e Edit) spec() string {
	return Hash([]byte(strings.Join([]string{string(e.Kind), e.Dir, e.Path, e.Content, e.Mode, e.Patch}, "\x00")))
}

// result describes changes; restore swaps the direction of Diff's
// headers.
func result(cs []change) Result {
	var r Result
	var diff strings.Builder
	for i := range cs {
		c := &cs[i]
		r.Edits = append(r.Edits, event.FileEdit{Path: c.path, Before: c.before, After: c.next.hash(), Mode: c.mode})
		if c.noop() {
			continue
		}
		r.Changed = true
		oldName, newName := "a/"+c.name, "b/"+c.name
		if filepath.IsAbs(c.name) {
			oldName, newName = c.name, c.name
		}
		if !c.cur.exists {
			oldName = ""
		}
		if !c.next.exists {
			newName = ""
		}
		diff.WriteString(Unified(oldName, newName, c.cur.content, c.next.content))
	}
	r.Diff = diff.String()
	return r
}

// DryRun returns what applying e would do — the diff, and the files'
// hashes before and after — without changing or recording anything: what
// a gate shows. It fails as Apply would (a path refused, a patch that
// does not apply).
func DryRun(e Edit, o Options) (Result, error) {
	var cs []change
	err := o.as(func() (err error) {
		cs, err = plan(e, o, nil, false)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %w", err)
	}
	return result(cs), nil
}

// Apply applies e: it stores the before-image of every file it changes
// and records the edit (both synced), then writes each file atomically.
// Applied again under the same Key, it leaves files that hold their result
// alone and reports the before-images recorded the first time. A patch
// that does not apply to one of its files changes none.
func (s *Store) Apply(e Edit, o Options) (Result, error) {
	if e.Key == "" {
		return Result{}, errors.New("fileedit: apply: the edit has no key")
	}
	j, err := s.journal(e.Key)
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %w", err)
	}
	known := make(map[string]event.FileEdit, len(j.Edits))
	for _, fe := range j.Edits {
		known[fe.Path] = fe
	}
	spec := e.spec()
	var cs []change
	err = o.as(func() (err error) {
		cs, err = plan(e, o, known, j.Spec == spec)
		return err
	})
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %w", err)
	}
	r := result(cs)
	record := j.Spec != spec
	for i := range cs {
		c := &cs[i]
		if k, ok := known[c.path]; !ok || k != r.Edits[i] {
			record = true
		}
		if !c.noop() && c.cur.exists {
			if _, err := s.putBlob(c.cur.content); err != nil {
				return Result{}, fmt.Errorf("fileedit: %s: %w", c.name, err)
			}
		}
	}
	if record {
		for _, fe := range r.Edits {
			known[fe.Path] = fe
		}
		next := journal{Key: e.Key, Spec: spec}
		for _, fe := range j.Edits { // earlier files first, in their order
			next.Edits = append(next.Edits, known[fe.Path])
			delete(known, fe.Path)
		}
		for _, fe := range r.Edits {
			if _, ok := known[fe.Path]; ok {
				next.Edits = append(next.Edits, fe)
			}
		}
		if err := s.putJournal(next); err != nil {
			return Result{}, fmt.Errorf("fileedit: %w", err)
		}
	}
	if err := o.as(func() error { return putAll(cs) }); err != nil {
		return Result{}, fmt.Errorf("fileedit: %w", err)
	}
	return r, nil
}

// putAll makes every file of cs hold its next state, in order.
func putAll(cs []change) error {
	for i := range cs {
		if err := put(&cs[i]); err != nil {
			return err
		}
	}
	return nil
}

// put makes c's file hold c.next.
func put(c *change) error {
	switch {
	case c.noop():
		return nil
	case !c.next.exists:
		return remove(c.at)
	}
	var own *owner
	if c.cur.exists && c.cur.uid >= 0 {
		own = &owner{c.cur.uid, c.cur.gid}
	}
	return writeAtomic(c.at, c.next.content, c.next.mode, own)
}

// Recorded returns the edits the store recorded under key — each file's
// hashes before and after, in order — or none. A compensation of an
// attempt that was interrupted before it reported its edits restores
// these: a file the attempt did not reach still holds its before-image
// and is left alone.
func (s *Store) Recorded(key string) ([]event.FileEdit, error) {
	j, err := s.journal(key)
	if err != nil {
		return nil, fmt.Errorf("fileedit: %w", err)
	}
	return j.Edits, nil
}

// ErrNotRecorded is a restore of an edit the store did not record: only
// what this executor applied under the key can be restored.
var ErrNotRecorded = errors.New("not an edit this store recorded")

// Restore puts back the before-images of edits — the Edits an Apply under
// key returned, as task.finished recorded them — last first: a file
// created by the edit is deleted, any other gets its recorded content and
// mode. Every edit must be one the store's journal holds for key (the
// same path and hashes; else ErrNotRecorded): a restore never touches a
// file this store did not edit.
// It is idempotent: a file that already holds its before-image is left
// alone. Every file is checked before any is changed: one that holds
// neither its before- nor its after-image (changed since the edit) fails
// the restore with an error wrapping ErrConflict and nothing changes.
// The Result lists, in the order restored, each file's hash before the
// restore (Before) and after it (After), and the diff of what changed.
func (s *Store) Restore(key string, edits []event.FileEdit, o Options) (Result, error) {
	if len(edits) == 0 {
		return Result{}, errors.New("fileedit: restore: no edits given")
	}
	j, err := s.journal(key)
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: restore: %w", err)
	}
	for _, fe := range edits {
		found := false
		for _, k := range j.Edits {
			if k.Path == fe.Path && k.Before == fe.Before && k.After == fe.After {
				found = true
				break
			}
		}
		if !found {
			return Result{}, fmt.Errorf("fileedit: restore %s (%s → %s): %w under %q", fe.Path, fe.Before, fe.After, ErrNotRecorded, key)
		}
	}
	cs := make([]change, 0, len(edits))
	seen := map[string]bool{}
	err = o.as(func() error {
		for i := len(edits) - 1; i >= 0; i-- {
			fe := edits[i]
			c, err := s.restoring(fe, o)
			if err != nil {
				return fmt.Errorf("restore %s: %w", fe.Path, err)
			}
			if seen[c.path] {
				return fmt.Errorf("restore: %s is listed twice", fe.Path)
			}
			seen[c.path] = true
			cs = append(cs, c)
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("fileedit: %w", err)
	}
	for i := range cs {
		c := &cs[i]
		if c.blob == "" {
			continue
		}
		if c.next.content, err = s.blob(c.blob); err != nil {
			return Result{}, fmt.Errorf("fileedit: restore %s: %w", c.path, err)
		}
	}
	r := result(cs)
	if err := o.as(func() error { return putAll(cs) }); err != nil {
		return Result{}, fmt.Errorf("fileedit: restore: %w", err)
	}
	return r, nil
}

// restoring works out one file's restore.
func (s *Store) restoring(fe event.FileEdit, o Options) (change, error) {
	if !filepath.IsAbs(fe.Path) || filepath.Clean(fe.Path) != fe.Path {
		return change{}, fmt.Errorf("path %q is not absolute and clean, as an edit records it", fe.Path)
	}
	for _, h := range []string{fe.Before, fe.After} {
		if h == event.FileAbsent {
			continue
		}
		if _, err := s.blobPath(h); err != nil {
			return change{}, err
		}
	}
	at, err := recorded(fe.Path)
	if err != nil {
		return change{}, err
	}
	if fi, err := os.Lstat(fe.Path); err == nil && !fi.Mode().IsRegular() {
		return change{}, fmt.Errorf("%s is %s now, not a regular file: %w", fe.Path, kindOf(fi.Mode()), ErrUnsafePath)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return change{}, err
	}
	cur, err := read(at, o.maxBytes())
	if err != nil {
		return change{}, err
	}
	c := change{path: fe.Path, at: at, name: fe.Path, cur: cur, before: cur.hash()}
	if cur.exists {
		c.mode = FormatMode(cur.mode)
	}
	switch h := cur.hash(); {
	case h == fe.Before:
		c.next = cur
	case h != fe.After:
		return change{}, fmt.Errorf("%w the edit: it holds %s, the edit left %s; not overwriting a later change", ErrConflict, h, fe.After)
	case fe.Before == event.FileAbsent:
		c.next = state{}
	default:
		mode := cur.mode
		if fe.Mode != "" {
			var err error
			if mode, err = ParseMode(fe.Mode); err != nil {
				return change{}, err
			}
		}
		c.next = cur
		c.next.exists, c.next.content, c.next.mode = true, nil, mode
		c.blob = fe.Before // read from the store by Restore, as the process
	}
	return c, nil
}
