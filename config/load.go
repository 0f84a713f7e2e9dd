package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Errors callers test for.
var (
	// ErrInvalid marks every configuration problem: a bad file, variable,
	// flag or value.
	ErrInvalid = errors.New("config: invalid")
)

// Load reads the YAML file at path over Default. Keys not in Config are
// errors that name the file and line, as are values of the wrong type;
// durations are strings such as "30s" or "5m". Load does not validate:
// call Validate after applying the environment and flags.
func Load(path string) (Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: read %s: %w", path, err)
	}
	return parse(path, b)
}

// parse decodes data (read from path) over Default.
func parse(path string, data []byte) (Config, error) {
	c := Default()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(&c)
	if errors.Is(err, io.EOF) { // empty file or only comments
		return Default(), nil
	}
	if err != nil {
		return Config{}, locate(path, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%w: %s: more than one YAML document", ErrInvalid, path)
	}
	return c, nil
}

var lineRE = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// locate rewrites yaml.v3 errors ("line 3: field foo not found in type
// config.Config") into "file:3: unknown key foo", one per problem.
func locate(path string, err error) error {
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		where, what := path, m
		if g := lineRE.FindStringSubmatch(m); g != nil {
			where, what = path+":"+g[1], g[2]
		}
		errs = append(errs, fmt.Errorf("%w: %s: %s", ErrInvalid, where, explain(what)))
	}
	return errors.Join(errs...)
}

var unknownRE = regexp.MustCompile(`^field (\S+) not found in type \S+$`)

// explain turns yaml.v3's messages into the words of this package.
func explain(msg string) string {
	if g := unknownRE.FindStringSubmatch(msg); g != nil {
		return "unknown key " + g[1]
	}
	if strings.Contains(msg, "time.Duration") {
		return msg + ` (durations are strings such as "30s" or "5m")`
	}
	return msg
}
