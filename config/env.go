package config

import (
	"errors"
	"fmt"
	"strings"
)

// EnvConfig names the variable Resolve reads the configuration file path
// from when no path is given.
const EnvConfig = "AGENTIC_CONFIG"

// ApplyEnv overrides c with the AGENTIC_* variables present in environ
// (os.Environ() form, "KEY=value"). A variable that is unset or empty leaves
// its field alone. Values that do not parse are errors naming the variable;
// every bad variable is reported, and the good ones are still applied.
func (c *Config) ApplyEnv(environ []string) error {
	vars := make(map[string]string, len(environ))
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	var errs []error
	for _, s := range settings {
		v := vars[s.env]
		if strings.TrimSpace(v) == "" {
			continue
		}
		if err := s.set(c, v); err != nil {
			errs = append(errs, fmt.Errorf("%w: %s: %w", ErrInvalid, s.env, err))
		}
	}
	return errors.Join(errs...)
}

// lookupEnv returns the value of key in environ.
func lookupEnv(environ []string, key string) string {
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
