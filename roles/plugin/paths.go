package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// ErrOutsideGrant marks a path argument outside the plugin's declared
// filesystem grant (or not a path at all).
var ErrOutsideGrant = errors.New("plugin: path outside the grant")

// PathArg is one path a tool call's arguments name, where: "args.path",
// "args.paths[1]".
type PathArg struct {
	Where string `json:"where"`
	Path  string `json:"path"`
}

// Paths returns the paths the arguments of a call of tool (its own name)
// name, by m.PathArgs, in argument order; an argument marked as a path
// that is neither a string nor an array of strings is an error.
func Paths(m event.PluginManifest, tool string, args json.RawMessage) ([]PathArg, error) {
	if len(args) == 0 {
		return nil, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil {
		return nil, fmt.Errorf("tool %s/%s: args: not a JSON object: %w", m.Name, tool, err)
	}
	var out []PathArg
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if !IsPathArg(m, tool, k) {
			continue
		}
		var one string
		if err := json.Unmarshal(obj[k], &one); err == nil {
			out = append(out, PathArg{Where: "args." + k, Path: one})
			continue
		}
		var many []string
		if err := json.Unmarshal(obj[k], &many); err != nil {
			return nil, fmt.Errorf("%w: args.%s of %s/%s is marked a path (path_args) and is neither a string nor an array of strings", ErrOutsideGrant, k, m.Name, tool)
		}
		for i, p := range many {
			out = append(out, PathArg{Where: fmt.Sprintf("args.%s[%d]", k, i), Path: p})
		}
	}
	return out, nil
}

// CheckGrants refuses a call of tool whose path arguments lie outside
// m.Grants.Filesystem: each must be absolute, and clean to a path at or
// beneath a granted one. The error names the argument, the path and the
// grant (a located reason), and wraps ErrOutsideGrant. The check is
// lexical: symbolic links are the server's to resolve, and Landlock's to
// enforce where it is on.
func CheckGrants(m event.PluginManifest, tool string, args json.RawMessage) error {
	paths, err := Paths(m, tool, args)
	if err != nil {
		return err
	}
	for _, p := range paths {
		if err := inGrant(m, p); err != nil {
			return fmt.Errorf("%w: tool %s/%s: %s", ErrOutsideGrant, m.Name, tool, err.Error())
		}
	}
	return nil
}

func inGrant(m event.PluginManifest, p PathArg) error {
	if !path.IsAbs(p.Path) {
		return fmt.Errorf("%s %q is not an absolute path", p.Where, p.Path)
	}
	clean := path.Clean(p.Path)
	for _, g := range m.Grants.Filesystem {
		if Within(clean, g) {
			return nil
		}
	}
	grant := "none"
	if len(m.Grants.Filesystem) > 0 {
		grant = strings.Join(m.Grants.Filesystem, ", ")
	}
	return fmt.Errorf("%s %q lies outside grants.filesystem (%s) of plugin %s", p.Where, p.Path, grant, m.Name)
}

// Within reports whether the clean absolute path p is dir or beneath it.
func Within(p, dir string) bool {
	dir = path.Clean(dir)
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}
