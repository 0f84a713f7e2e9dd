package fileedit

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
)

// ErrBadPatch is a patch that does not parse, or asks for what an edit
// does not do (renames, copies, binary changes, mode changes).
var ErrBadPatch = errors.New("bad patch")

// PatchFile is one file a patch changes.
type PatchFile struct {
	// Path is the file's name in the patch, relative to the working
	// directory (git's a/ and b/ prefixes dropped), slash-separated.
	Path string
	// New: the patch creates the file. Delete: it deletes it.
	New, Delete bool

	f *gitdiff.File
}

// ParsePatch parses a unified diff and returns the files it changes, in
// patch order. It does no I/O: planners and the policy use it to check a
// patch and to see what it writes. A patch that does not parse, names no
// file, names a file twice, or renames, copies, changes a mode or carries
// binary data is refused with an error wrapping ErrBadPatch.
func ParsePatch(patch string) ([]PatchFile, error) {
	if strings.TrimSpace(patch) == "" {
		return nil, fmt.Errorf("patch is empty: %w", ErrBadPatch)
	}
	files, _, err := gitdiff.Parse(strings.NewReader(patch))
	if err != nil {
		return nil, fmt.Errorf("patch does not parse: %v: %w", err, ErrBadPatch)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("patch names no file: want a unified diff (--- old, +++ new, @@ hunks): %w", ErrBadPatch)
	}
	strip := !strings.Contains(patch, "diff --git ") && abPrefixed(patch)
	out := make([]PatchFile, 0, len(files))
	seen := map[string]bool{}
	for _, f := range files {
		name := f.NewName
		if f.IsDelete {
			name = f.OldName
		}
		if strip {
			name = dropFirst(name)
		}
		pf := PatchFile{Path: name, New: f.IsNew, Delete: f.IsDelete, f: f}
		switch {
		case name == "":
			return nil, fmt.Errorf("patch has a file without a name: %w", ErrBadPatch)
		case f.IsRename || f.IsCopy:
			return nil, fmt.Errorf("patch renames or copies %s; write the new file and delete the old one instead: %w", name, ErrBadPatch)
		case f.IsBinary:
			return nil, fmt.Errorf("patch changes %s as binary data; only text patches are applied: %w", name, ErrBadPatch)
		case !f.IsNew && !f.IsDelete && f.OldMode != 0 && f.NewMode != 0 && f.OldMode != f.NewMode:
			return nil, fmt.Errorf("patch changes the mode of %s; mode changes are not applied: %w", name, ErrBadPatch)
		case !f.IsNew && !f.IsDelete && len(f.TextFragments) == 0:
			return nil, fmt.Errorf("patch has no hunk for %s: %w", name, ErrBadPatch)
		case seen[path.Clean(name)]:
			return nil, fmt.Errorf("patch changes %s twice; give one diff per file: %w", name, ErrBadPatch)
		}
		seen[path.Clean(name)] = true
		out = append(out, pf)
	}
	return out, nil
}

// abPrefixed reports whether every traditional header pair of the patch
// (--- and +++ lines followed by a hunk) names a/… and b/… (or
// /dev/null): the patch was made with -p1 names.
func abPrefixed(patch string) bool {
	lines := strings.Split(patch, "\n")
	pairs := 0
	for i := 0; i+2 < len(lines); i++ {
		o, ok1 := strings.CutPrefix(lines[i], "--- ")
		n, ok2 := strings.CutPrefix(lines[i+1], "+++ ")
		if !ok1 || !ok2 || !strings.HasPrefix(lines[i+2], "@@ -") {
			continue // not a header: a header is followed by a hunk
		}
		pairs++
		if !(strings.HasPrefix(o, "a/") || strings.HasPrefix(o, "/dev/null")) ||
			!(strings.HasPrefix(n, "b/") || strings.HasPrefix(n, "/dev/null")) {
			return false
		}
		i++
	}
	return pairs > 0
}

func dropFirst(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

// apply is the content the patch gives one file (its current content
// given), or a clear error when it does not apply.
func (pf PatchFile) apply(cur state) (state, error) {
	switch {
	case pf.New && cur.exists:
		return state{}, fmt.Errorf("patch creates %s, but it exists", pf.Path)
	case !pf.New && !cur.exists:
		return state{}, fmt.Errorf("patch changes %s, but it does not exist", pf.Path)
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, bytes.NewReader(cur.content), pf.f); err != nil {
		var c *gitdiff.Conflict
		if errors.As(err, &c) {
			return state{}, fmt.Errorf("patch does not apply to %s (its lines differ from the patch's context): %v", pf.Path, err)
		}
		return state{}, fmt.Errorf("patch does not apply to %s: %v", pf.Path, err)
	}
	if pf.Delete {
		if out.Len() != 0 {
			return state{}, fmt.Errorf("patch deletes %s, but the file holds more than the patch removes", pf.Path)
		}
		return state{}, nil
	}
	next := cur
	next.exists, next.content = true, out.Bytes()
	if pf.New {
		next.mode = 0o644
		if pf.f.NewMode != 0 {
			next.mode = pf.f.NewMode.Perm()
		}
		next.uid, next.gid = -1, -1
	}
	return next, nil
}
