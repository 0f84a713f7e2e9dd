package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// EndedKeep is how long the state of a run that ended here is kept: a
// git.finish attempted again within it (its result lost on the way to the
// leader) finds the run's pull request recorded and records no other.
const EndedKeep = time.Hour

// End records that run ended here — its pull request is in the ledger —
// and prunes the executor's clone of its url when no other run needs it
// (each run that used it ended with its branch pushed, or was
// discarded). Its state file stays EndedKeep, then Sweep removes it.
func (w *Work) End(ctx context.Context, run string) error {
	unlock := w.lock(run)
	st, err := w.Load(run)
	if err == nil && st.EndedAt.IsZero() {
		st.EndedAt = time.Now().UTC()
		err = w.save(st)
	}
	unlock()
	if err != nil {
		return err
	}
	return w.pruneClone(ctx, st)
}

// pruneClone removes the clone st's run used, if st is a url run and no
// state file names the clone but those of runs that ended with their
// branch pushed (the clone holds the only copy of another's branch).
func (w *Work) pruneClone(ctx context.Context, st State) error {
	if st.Origin == st.Repo || !w.isClone(st.Repo) {
		return nil
	}
	states, err := w.states(0)
	if err != nil {
		return err
	}
	for _, o := range states {
		if o.Run != st.Run && o.Repo == st.Repo && !(o.Finished && o.Pushed && !o.EndedAt.IsZero()) {
			return nil
		}
	}
	if err := os.RemoveAll(st.Repo); err != nil {
		return fmt.Errorf("gitwork: run %s: remove the clone %s: %w", st.Run, st.Repo, err)
	}
	return nil
}

// isClone reports whether dir is one of the clones Work makes.
func (w *Work) isClone(dir string) bool {
	return filepath.Dir(dir) == filepath.Join(w.cfg.Dir, "clones") && strings.HasSuffix(dir, ".git")
}

// states reads the state files (at most max; 0: all), in name order;
// files that do not read are skipped.
func (w *Work) states(max int) ([]State, error) {
	ents, err := os.ReadDir(w.cfg.StateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("gitwork: state dir: %w", err)
	}
	var out []State
	for _, e := range ents {
		run, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok {
			continue
		}
		if max > 0 && len(out) == max {
			break
		}
		if st, err := w.Load(run); err == nil {
			out = append(out, st)
		}
	}
	return out, nil
}

// Sweep is the executor's bounded clean-up at start: it removes the
// temporary files interrupted saves left, the state files of runs that
// ended more than EndedKeep before now, and the clones no state file
// names — looking at most at max entries of each kind — and returns how
// many it removed.
func (w *Work) Sweep(ctx context.Context, now time.Time, max int) (int, error) {
	removed := 0
	var errs []error
	ents, err := os.ReadDir(w.cfg.StateDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return 0, fmt.Errorf("gitwork: state dir: %w", err)
	}
	seen := 0
	for _, e := range ents {
		if seen == max {
			break
		}
		name := e.Name()
		run, isState := strings.CutSuffix(name, ".json")
		switch {
		case strings.HasSuffix(name, ".tmp"):
			seen++
			if err := os.Remove(filepath.Join(w.cfg.StateDir, name)); err == nil {
				removed++
			}
		case isState:
			seen++
			st, err := w.Load(run)
			if err != nil || st.EndedAt.IsZero() || now.Sub(st.EndedAt) < EndedKeep {
				continue
			}
			unlock := w.lock(run)
			err = os.Remove(w.statePath(run))
			unlock()
			if err == nil {
				removed++
			} else {
				errs = append(errs, err)
			}
		}
	}
	clones, err := os.ReadDir(filepath.Join(w.cfg.Dir, "clones"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return removed, fmt.Errorf("gitwork: clones: %w", err)
	}
	if len(clones) == 0 {
		return removed, errors.Join(errs...)
	}
	states, err := w.states(0)
	if err != nil {
		return removed, err
	}
	for i, c := range clones {
		if i == max {
			break
		}
		dir := filepath.Join(w.cfg.Dir, "clones", c.Name())
		if !w.isClone(dir) || slices.ContainsFunc(states, func(st State) bool { return st.Repo == dir }) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
	}
	return removed, errors.Join(errs...)
}
