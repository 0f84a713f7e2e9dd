package bootstrap

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// Beside the ledger directory DIR: the copy being made and verified, and
// the old ledger while the copy takes its place.
const (
	copySuffix     = ".bootstrap"
	replacedSuffix = ".replaced"
)

// Recover brings dir back to one whole ledger after a crash during a
// bootstrap: a swap interrupted between its two renames is undone (the old
// ledger goes back), a finished swap's old ledger is removed, and a copy
// never swapped in (unfinished, or not yet verified) is removed. Open runs
// it first; it is a no-op when no bootstrap was under way.
func Recover(dir string, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	old, cp := dir+replacedSuffix, dir+copySuffix
	oldThere, err := exists(old)
	if err != nil {
		return err
	}
	if oldThere {
		dirThere, err := exists(dir)
		if err != nil {
			return err
		}
		if dirThere {
			log.Warn("removing the ledger a finished bootstrap replaced", "dir", old)
			if err := os.RemoveAll(old); err != nil {
				return fmt.Errorf("bootstrap: remove %s: %w", old, err)
			}
		} else {
			log.Warn("a bootstrap was interrupted while swapping ledgers: the old ledger goes back", "dir", dir)
			if err := rename(old, dir); err != nil {
				return err
			}
		}
	}
	cpThere, err := exists(cp)
	if err != nil {
		return err
	}
	if cpThere {
		log.Warn("removing a ledger copy a bootstrap left unfinished", "dir", cp)
		if err := os.RemoveAll(cp); err != nil {
			return fmt.Errorf("bootstrap: remove %s: %w", cp, err)
		}
	}
	return nil
}

// swap puts the verified, closed copy at dir+copySuffix in dir's place.
// A crash at any point leaves what Recover turns into the old ledger or
// the copy.
func swap(dir string, log *slog.Logger) error {
	old, cp := dir+replacedSuffix, dir+copySuffix
	dirThere, err := exists(dir)
	if err != nil {
		return err
	}
	if dirThere {
		if err := rename(dir, old); err != nil {
			return err
		}
	}
	if err := rename(cp, dir); err != nil {
		return err
	}
	log.Info("ledger replaced by the verified copy", "dir", dir)
	if err := os.RemoveAll(old); err != nil {
		// The next start's Recover removes it.
		log.Warn("removing the replaced ledger", "dir", old, "err", err)
	}
	return nil
}

// rename renames from to to and syncs their parent directory, so that the
// rename survives a power loss before anything that follows it.
func rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	return syncDir(filepath.Dir(to))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("bootstrap: sync %s: %w", dir, err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("bootstrap: sync %s: %w", dir, err)
	}
	return nil
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("bootstrap: %w", err)
}
