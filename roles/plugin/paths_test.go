package plugin_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentic-dev/agentic/roles/plugin"
)

func TestCheckGrants(t *testing.T) {
	m := fsManifest(t) // grants /srv/data; path_args path, paths, source, destination
	for _, c := range []struct {
		tool, args string
		want       string // "" = allowed
	}{
		{"read_text_file", `{"path":"/srv/data/notes.md"}`, ""},
		{"read_text_file", `{"path":"/srv/data"}`, ""},
		{"read_text_file", `{"path":"/srv/data/../../etc/passwd"}`, `args.path "/srv/data/../../etc/passwd" lies outside grants.filesystem (/srv/data) of plugin fs`},
		{"read_text_file", `{"path":"/srv/database"}`, `args.path "/srv/database" lies outside`},
		{"read_text_file", `{"path":"notes.md"}`, `args.path "notes.md" is not an absolute path`},
		{"read_multiple_files", `{"paths":["/srv/data/a","/etc/shadow"]}`, `args.paths[1] "/etc/shadow" lies outside`},
		{"move_file", `{"source":"/srv/data/a","destination":"/tmp/a"}`, `args.destination "/tmp/a"`},
		{"read_text_file", `{"path":{"x":1}}`, "neither a string nor an array of strings"},
		{"write_file", `{"path":"/srv/data/a","content":"/etc/passwd"}`, ""},
		{"write_file", `[1]`, "not a JSON object"},
	} {
		err := plugin.CheckGrants(m, c.tool, []byte(c.args))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s: %v", c.tool, c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s: %v, want %q", c.tool, c.args, err, c.want)
		case c.want != "" && c.want != "not a JSON object" && !errors.Is(err, plugin.ErrOutsideGrant):
			t.Errorf("%s %s: %v is not ErrOutsideGrant", c.tool, c.args, err)
		}
	}
}
