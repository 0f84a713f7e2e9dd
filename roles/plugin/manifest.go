package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/envallow"
	"gopkg.in/yaml.v3"
)

// ErrInvalidManifest marks a manifest that cannot be used; the error lists
// every problem.
var ErrInvalidManifest = errors.New("plugin: invalid manifest")

// ManifestError lists every problem of a manifest, each with its file and
// line when it came from one.
type ManifestError struct {
	File     string
	Problems []string
}

func (e *ManifestError) Error() string {
	name := e.File
	if name == "" {
		name = "manifest"
	}
	return name + ": " + strings.Join(e.Problems, "\n"+name+": ")
}

// Is makes errors.Is(err, ErrInvalidManifest) true.
func (e *ManifestError) Is(target error) bool { return target == ErrInvalidManifest }

// manifestFile is the file form of a manifest (YAML or JSON).
type manifestFile struct {
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Command     []string `yaml:"command"`
	Grants      struct {
		Filesystem []string `yaml:"filesystem"`
		Network    []string `yaml:"network"`
		Exec       bool     `yaml:"exec"`
	} `yaml:"grants"`
	Env      []string `yaml:"env"`
	PathArgs []string `yaml:"path_args"`
}

// ParseManifest reads a manifest file (YAML; JSON is YAML too) and
// validates it. name is the file name used in errors. Unknown keys are
// errors naming their line; every problem is reported at once
// (a *ManifestError, errors.Is ErrInvalidManifest).
func ParseManifest(data []byte, name string) (event.PluginManifest, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f manifestFile
	if err := dec.Decode(&f); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if err.Error() == "EOF" {
			msg = "empty manifest: want name, command and grants"
		}
		msg = strings.ReplaceAll(msg, "unmarshal errors:\n  ", "")
		msg = strings.ReplaceAll(msg, "in type plugin.manifestFile", "in a manifest")
		return event.PluginManifest{}, &ManifestError{File: name, Problems: strings.Split(msg, "\n  ")}
	}
	m := event.PluginManifest{
		Name: f.Name, Description: f.Description, Command: f.Command,
		Grants: event.PluginGrants{Filesystem: f.Grants.Filesystem, Network: f.Grants.Network, Exec: f.Grants.Exec},
		Env:    f.Env, PathArgs: f.PathArgs,
	}
	if err := Validate(m); err != nil {
		var me *ManifestError
		if errors.As(err, &me) {
			me.File = name
		}
		return event.PluginManifest{}, err
	}
	return m, nil
}

// Limits of a manifest.
const (
	maxCommandArgs = 256
	maxArgLen      = 4096
	maxListLen     = 256
	maxDescription = 4096
)

// Validate checks a manifest and reports every problem at once (a
// *ManifestError), or nil.
func Validate(m event.PluginManifest) error {
	var p []string
	bad := func(format string, a ...any) { p = append(p, fmt.Sprintf(format, a...)) }
	if err := event.ValidPluginName(m.Name); err != nil {
		bad("name: %v", err)
	}
	if len(m.Description) > maxDescription {
		bad("description: %d bytes; the limit is %d", len(m.Description), maxDescription)
	}
	switch {
	case len(m.Command) == 0:
		bad(`command: empty: give the server's argument vector, e.g. ["node", "/opt/mcp/server.js"]`)
	case len(m.Command) > maxCommandArgs:
		bad("command: %d arguments; the limit is %d", len(m.Command), maxCommandArgs)
	default:
		prog := m.Command[0]
		if prog == "" || strings.ContainsAny(prog, " \t\n") && !path.IsAbs(prog) {
			bad("command[0]: %q is not a program: give an absolute path or a program name on the executor's PATH (no shell runs it)", prog)
		} else if !path.IsAbs(prog) && strings.Contains(prog, "/") {
			bad("command[0]: %q is relative: give an absolute path or a bare program name on the executor's PATH", prog)
		}
		for i, a := range m.Command {
			if strings.IndexByte(a, 0) >= 0 || len(a) > maxArgLen {
				bad("command[%d]: holds a NUL byte or is longer than %d bytes", i, maxArgLen)
			}
		}
	}
	checkList(&p, "grants.filesystem", m.Grants.Filesystem)
	for i, f := range m.Grants.Filesystem {
		switch {
		case !path.IsAbs(f):
			bad("grants.filesystem[%d]: %q is not an absolute path", i, f)
		case path.Clean(f) != f:
			bad("grants.filesystem[%d]: %q is not clean: write %q", i, f, path.Clean(f))
		case f == "/":
			bad("grants.filesystem[%d]: \"/\" grants the whole file system: name the directories the server needs", i)
		}
	}
	checkList(&p, "grants.network", m.Grants.Network)
	for i, h := range m.Grants.Network {
		if err := checkHost(h); err != nil {
			bad("grants.network[%d]: %v", i, err)
		}
	}
	checkList(&p, "env", m.Env)
	if err := envallow.Check(m.Env); err != nil {
		bad("env: %v", err)
	}
	checkList(&p, "path_args", m.PathArgs)
	for i, a := range m.PathArgs {
		tool, arg, scoped := strings.Cut(a, ".")
		if !scoped {
			tool, arg = "", a
		}
		if !ident(arg) || scoped && tool == "" {
			bad("path_args[%d]: %q: name an argument (path) or one tool's argument (move_file.destination)", i, a)
		}
	}
	if len(p) > 0 {
		return &ManifestError{Problems: p}
	}
	return nil
}

func checkList(p *[]string, key string, l []string) {
	if len(l) > maxListLen {
		*p = append(*p, fmt.Sprintf("%s: %d entries; the limit is %d", key, len(l), maxListLen))
	}
}

// checkHost accepts host or host:port, a name or an address, no scheme.
func checkHost(h string) error {
	if strings.Contains(h, "://") || strings.ContainsAny(h, "/ \t") {
		return fmt.Errorf("%q: give host or host:port, without a scheme or a path", h)
	}
	host := h
	if hh, port, err := net.SplitHostPort(h); err == nil {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("%q: port %q is not 1 to 65535", h, port)
		}
		host = hh
	}
	if host == "" {
		return fmt.Errorf("%q: no host", h)
	}
	return nil
}

// ident reports whether s is a tool argument name: letters, digits, '_'
// and '-'.
func ident(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// IsPathArg reports whether argument arg of tool (its own name) is a
// path by m.PathArgs.
func IsPathArg(m event.PluginManifest, tool, arg string) bool {
	for _, a := range m.PathArgs {
		if a == arg || a == tool+"."+arg {
			return true
		}
	}
	return false
}
