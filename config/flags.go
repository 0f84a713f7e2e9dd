package config

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
)

// BindFlags registers the command-line flags (--data, --name, --roles,
// --nats, --nats-listen, --http-listen, --probe-listen, --debug-listen,
// --insecure,
// --gossip-listen, --join,
// --log-level, --log-format, --executor-slots, --executor-timeout,
// --executor-workdir, --lease-ttl, --policy) on fs, writing into c when
// parsed. Their defaults are c's current values. --config is the caller's.
//
// Flags are parsed before the file is known, so to honour the precedence
// defaults < file < env < flags, bind them to a scratch Config and apply
// them last with ApplyFlags (Resolve does all of it).
func (c *Config) BindFlags(fs *pflag.FlagSet) {
	for _, s := range settings {
		fs.Var(&flagValue{c: c, s: s}, s.flag, s.usage)
		if s.kind == "bool" {
			fs.Lookup(s.flag).NoOptDefVal = "true" // --insecure alone means true
		}
	}
}

// ApplyFlags copies onto c the values of the flags that were set on fs (by
// BindFlags on any Config). Flags not set on the command line are skipped,
// so they do not undo the file or the environment.
func (c *Config) ApplyFlags(fs *pflag.FlagSet) error {
	var errs []error
	fs.Visit(func(f *pflag.Flag) {
		s, ok := settingByFlag(f.Name)
		if !ok {
			return
		}
		if err := s.set(c, f.Value.String()); err != nil {
			errs = append(errs, fmt.Errorf("%w: --%s: %w", ErrInvalid, f.Name, err))
		}
	})
	return errors.Join(errs...)
}

// Resolve builds the configuration in precedence order: Default, then the
// file at path (or at $AGENTIC_CONFIG when path is empty; no file when both
// are empty), then environ's AGENTIC_* variables, then the flags set on fs
// (registered with BindFlags; fs may be nil). It validates the result.
func Resolve(path string, environ []string, fs *pflag.FlagSet) (Config, error) {
	if path == "" {
		path = lookupEnv(environ, EnvConfig)
	}
	c := Default()
	if path != "" {
		var err error
		if c, err = Load(path); err != nil {
			return Config{}, err
		}
	}
	if err := c.ApplyEnv(environ); err != nil {
		return Config{}, err
	}
	if fs != nil {
		if err := c.ApplyFlags(fs); err != nil {
			return Config{}, err
		}
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// flagValue is a pflag.Value writing one setting into a Config. String
// gives the same text form the environment uses, which ApplyFlags parses
// back.
type flagValue struct {
	c *Config
	s setting
}

func (v *flagValue) String() string {
	if v.c == nil {
		return ""
	}
	return v.s.get(v.c)
}

func (v *flagValue) Set(s string) error { return v.s.set(v.c, s) }

func (v *flagValue) Type() string { return v.s.kind }
