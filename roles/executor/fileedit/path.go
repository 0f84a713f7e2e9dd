package fileedit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrUnsafePath is a path the edit may not touch: outside the working
// directory, through a symlink, or not a regular file.
var ErrUnsafePath = errors.New("unsafe path")

// Options bound what an edit may touch.
type Options struct {
	// AllowAbsolute reports whether an absolute path outside the working
	// directory may be edited (for instance: it is inside the policy's
	// file scope). Nil allows none. It is asked about the path as given
	// and as resolved (symlinks of its directories followed).
	AllowAbsolute func(path string) bool
	// MaxFileBytes caps the size of a file read or written; 0 means
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// As runs fn — every operation on the edited files: resolving their
	// paths, reading, writing, deleting — as the user the edit is made
	// for, and returns fn's error (wrapped with that user's name, if it
	// likes); the executor gives runner.AsUser. The store's own files
	// (before-images, journal) are read and written outside it, as the
	// process. Nil runs fn as the process.
	As func(fn func() error) error
}

// as runs fn as o.As says.
func (o Options) as(fn func() error) error {
	if o.As == nil {
		return fn()
	}
	return o.As(fn)
}

// DefaultMaxFileBytes is the largest file an edit reads or writes unless
// Options say otherwise.
const DefaultMaxFileBytes = 16 << 20

func (o Options) maxBytes() int64 {
	if o.MaxFileBytes > 0 {
		return o.MaxFileBytes
	}
	return DefaultMaxFileBytes
}

// resolve returns the absolute path an edit of name, given relative to
// dir, writes — its directory's symlinks resolved, inside dir unless name
// is absolute and allowed — and where the operations reach it: beneath
// dir, or beneath its own directory when outside dir. The file itself may
// not exist; if it does it must be a regular file (not a symlink).
func resolve(dir, name string, o Options) (string, loc, error) {
	p, err := resolvePath(dir, name, o)
	if err != nil {
		return "", loc{}, err
	}
	root, _ := filepath.EvalSymlinks(dir) // resolvePath succeeded
	if rel, err := filepath.Rel(root, p); err == nil && within(root, p) {
		return p, loc{Dir: root, Rel: rel}, nil
	}
	return p, loc{Dir: filepath.Dir(p), Rel: filepath.Base(p)}, nil
}

// recorded is where the operations reach a path an edit recorded
// (absolute, its directories' symlinks resolved): beneath its directory,
// which must still be what was recorded — not a symlink now.
func recorded(p string) (loc, error) {
	dir := filepath.Dir(p)
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return loc{}, fmt.Errorf("directory %s: %w", dir, err)
	}
	if real != dir {
		return loc{}, fmt.Errorf("directory %s now leads to %s (a symlink): %w", dir, real, ErrUnsafePath)
	}
	return loc{Dir: dir, Rel: filepath.Base(p)}, nil
}

func resolvePath(dir, name string, o Options) (string, error) {
	if name == "" {
		return "", fmt.Errorf("no path given")
	}
	if strings.IndexByte(name, 0) >= 0 {
		return "", fmt.Errorf("path %q holds a NUL byte: %w", name, ErrUnsafePath)
	}
	if !filepath.IsAbs(dir) {
		return "", fmt.Errorf("working directory %q is not absolute", dir)
	}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("working directory %s: %w", dir, err)
	}
	abs := filepath.IsAbs(name)
	var target string
	if abs {
		target = filepath.Clean(name)
	} else {
		clean := filepath.Clean(name)
		if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("path %s leaves the working directory %s: %w", name, dir, ErrUnsafePath)
		}
		target = filepath.Join(root, clean)
	}
	base := filepath.Base(target)
	if base == "." || base == ".." || base == string(filepath.Separator) || target == root {
		return "", fmt.Errorf("path %s names a directory, not a file: %w", name, ErrUnsafePath)
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(target))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("path %s: directory %s does not exist (create it first)", name, filepath.Dir(target))
		}
		return "", fmt.Errorf("path %s: %w", name, err)
	}
	final := filepath.Join(parent, base)
	if !within(root, final) {
		switch {
		case !abs:
			return "", fmt.Errorf("path %s leads outside the working directory %s (to %s, through a symlink): %w", name, dir, final, ErrUnsafePath)
		case o.AllowAbsolute == nil || !o.AllowAbsolute(target) || !o.AllowAbsolute(final):
			return "", fmt.Errorf("path %s is outside the working directory %s and not allowed: %w", final, dir, ErrUnsafePath)
		}
	}
	fi, err := os.Lstat(final)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return final, nil
	case err != nil:
		return "", fmt.Errorf("path %s: %w", final, err)
	case fi.Mode()&fs.ModeSymlink != 0:
		return "", fmt.Errorf("path %s is a symlink; edit the file it points to by its own path: %w", final, ErrUnsafePath)
	case !fi.Mode().IsRegular():
		return "", fmt.Errorf("path %s is not a regular file (%s): %w", final, kindOf(fi.Mode()), ErrUnsafePath)
	}
	return final, nil
}

// within reports whether p is root or below it.
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func kindOf(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return m.Type().String()
	}
}

// display is p relative to dir when inside it, else p.
func display(dir, p string) string {
	if root, err := filepath.EvalSymlinks(dir); err == nil && within(root, p) {
		if rel, err := filepath.Rel(root, p); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return p
}
