package runner

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// resolveCwd returns the absolute working directory of a step and checks
// that it is a directory.
func resolveCwd(cwd, def string) (string, error) {
	if cwd == "" {
		cwd = def
	} else if !filepath.IsAbs(cwd) && def != "" {
		cwd = filepath.Join(def, cwd)
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", fmt.Errorf("cwd %s: %s", cwd, reason(err))
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return abs, fmt.Errorf("cwd %s: %s", abs, reason(err))
	}
	if !fi.IsDir() {
		return abs, fmt.Errorf("cwd %s: not a directory", abs)
	}
	return abs, nil
}

// reason is err without the operation and path a PathError repeats.
func reason(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Dir is the absolute working directory spec runs in with opts (its Cwd,
// relative to Options.DefaultCwd), checked to be a directory: what the
// executor judges a step's command in before running it.
func Dir(spec Spec, opts Options) (string, error) {
	return resolveCwd(spec.Cwd, opts.withDefaults().DefaultCwd)
}
