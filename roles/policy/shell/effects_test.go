package shell

import (
	"slices"
	"strings"
	"testing"
)

// effectsOf lists "class:how" for every effect of every command.
func effectsOf(src string) []string {
	var out []string
	for _, c := range Parse(src) {
		for _, e := range c.Effects {
			out = append(out, e.Class+":"+e.How)
		}
	}
	return out
}

func TestEffectsOfEverySpelling(t *testing.T) {
	cases := map[string][]string{
		"rm -r x":                               {"recursive-delete:rm -r"},
		"rm --recursive --force x":              {"recursive-delete:rm --recursive"},
		"find /srv -delete":                     {"recursive-delete:find -delete"},
		"find /srv -name '*' -delete":           {"recursive-delete:find -delete"},
		"find /srv -exec rm {} +":               {"recursive-delete:find -exec rm"},
		"find /srv -execdir /bin/unlink {} \\;": {"recursive-delete:find -execdir unlink"},
		"rsync -a --delete-after a/ b/":         {"recursive-delete:rsync --delete-after"},
		"rsync -a --remove-source-files a/ b/":  {"recursive-delete:rsync --remove-source-files"},
		"git clean -fdx":                        {"recursive-delete:git clean -d -f"},
		"tar -cf x.tar --remove-files d":        {"recursive-delete:tar --remove-files"},
		"mv d /dev/null":                        {"wipe:mv to /dev/null"},
		"chmod -R 000 d":                        {"wipe:chmod -R 000"},
		"chmod -R a-rwx d":                      {"wipe:chmod -R a-rwx"},
		"chmod -R ugo= d":                       {"wipe:chmod -R ugo="},
		"dd if=/dev/zero of=f":                  {"wipe:dd of="},
		"truncate -s 0 f":                       {"wipe:truncate -s 0"},
		"truncate --size=0K f":                  {"wipe:truncate -s 0K"},
		"shred f":                               {"wipe:shred"},
		"cp /dev/null f":                        {"wipe:cp /dev/null"},
		"> f":                                   {"wipe:truncation by >"},
		": > f":                                 {"wipe:truncation by >"},
		"cat /dev/null >| f":                    {"wipe:truncation by >|"},
		"printf '' > f":                         {"wipe:truncation by >"},
		// Not destroying a tree or wiping: the same programs used
		// ordinarily.
		"rm f":                          nil,
		"rm -f f":                       nil,
		"find . -name '*.tmp' -delete":  nil,
		"find . -empty -delete":         nil,
		"rsync -a a/ b/":                nil,
		"git clean -n":                  nil,
		"mv a b":                        nil,
		"chmod -R 755 d":                nil,
		"chmod 000 f":                   nil,
		"dd if=a of=/dev/null":          nil,
		"truncate -s 10M f":             nil,
		"echo x > f":                    nil,
		": >> f":                        nil,
		"cp a f":                        nil,
		"exec > log 2>&1":               nil,
		"{ echo a; } > f":               nil,
		"for i in 1; do echo; done > f": nil,
	}
	for src, want := range cases {
		if got := effectsOf(src); !slices.Equal(got, want) {
			t.Errorf("%q: effects %v, want %v", src, got, want)
		}
	}
}

// TestEffectTargets: what an effect destroys is resolved like a write.
func TestEffectTargets(t *testing.T) {
	cs := Parse("cd /srv && find data -delete")
	e := cs[len(cs)-1].Effects
	if len(e) != 1 || len(e[0].Targets) != 1 || e[0].Targets[0].Path != "/srv/data" || !e[0].Targets[0].Known {
		t.Fatalf("effects %+v, want a recursive delete of /srv/data", e)
	}
	cs = Parse("rsync -a --delete ./empty/ /srv/data/")
	if e := cs[0].Effects; len(e) != 1 || e[0].Targets[0].Path != "/srv/data" {
		t.Fatalf("effects %+v, want the destination /srv/data", e)
	}
}

// TestInlineCodeAfterOptions: an interpreter's inline code is found
// whatever options come before it, and a script's own arguments are not
// read as the interpreter's options.
func TestInlineCodeAfterOptions(t *testing.T) {
	for _, src := range []string{
		"python3 -W ignore -c x", "python3 -X dev -c x", "python3 -Wignore -c x", "python3 -I -S -c x", "python3 -bc x",
		"python3.12 -c x", "pypy3 -c x", "jython -c x", "perl -Mstrict -e x", "perl -MFile::Path=rmtree -e x",
		"perl -I lib -e x", "perl -lne x", "perl -0777 -ne x", "perl -pi.bak -e x", "perl -pie x", "ruby -r fileutils -e x",
		"ruby -rfileutils -e x", "ruby -I lib -C /tmp -e x", "node -r fs -e x", "node --require fs -e x", "node --input-type=module -e x",
		"node -pe x", "nodejs --eval x", "php -d x=1 -r x", "php -c php.ini -r x", "lua -l os -e x", "lua5.4 -e x",
		"deno eval x", "deno eval --quiet x", "deno repl --eval x", "bun -e x", "Rscript --vanilla -e x", "R --no-save -e x",
		"osascript -l JavaScript -e x", "julia --startup-file=no -e x", "julia -t 4 -e x", "guile -c x", "sbcl --eval x",
		"elixir -e x", "erl -noshell -eval x", "node --unknown-flag value -e x", "deno run -", "python3 -", "perl",
		"perl -CSDe x", "perl -CSD -e x", "perl -de x", "perl -0777ne x", "perl -l0e x", "perl -Dte x", "ruby -W0e x",
		"ruby -Ke -e x", "ruby -Kue x", "ruby -W:no-deprecated -e x",
	} {
		cs := Parse(src)
		if len(cs) != 1 || cs[0].Opaque == "" {
			t.Errorf("%q: %+v, want unseen code", src, cs)
		}
	}
	for _, src := range []string{
		"python3 train.py -c config.yaml", "python3 -m pytest -c x", "python3 -W ignore script.py -c x", "python3 -u -X dev app.py",
		"perl -Mstrict script.pl -e x", "perl -I lib script.pl", "ruby -I lib test.rb -e x", "ruby -r bundler/setup app.rb",
		"node server.js -e prod", "node -r dotenv/config server.js -p 1", "node --require ts-node/register a.ts",
		"php -d memory_limit=1G artisan migrate", "deno run -A main.ts", "deno run main.ts --eval x", "bun run build",
		"lua -l socket script.lua -e x", "python3 --version", "node --input-type=module app.mjs",
		"perl -d:Trace script.pl -e x", "perl -CSD script.pl", "perl -Mfeature=say script.pl", "ruby -Ku script.rb -e x",
	} {
		cs := Parse(src)
		if len(cs) != 1 || cs[0].Opaque != "" {
			t.Errorf("%q: %+v, want a script run, not unseen code", src, cs)
		}
	}
}

// TestCommandStrings: programs that run a command string have it parsed
// like sh -c.
func TestCommandStrings(t *testing.T) {
	cases := map[string][]string{
		"flock /tmp/l -c 'a; b'":                 {"flock", "a", "b"},
		"flock /tmp/l --command 'a | b'":         {"flock", "a", "b"},
		"flock -w 5 /tmp/l a x":                  {"flock", "a"},
		"git -c core.pager='a | b' log":          {"git", "a", "b"},
		"git -c core.editor=a commit":            {"git!", "a"},
		"git -c alias.x='!a' x":                  {"git!", "a"},
		"git -c color.ui=never log":              {"git"},
		"gdb -batch -ex 'shell a && b' ./p":      {"gdb", "a", "b"},
		"gdb -ex '!a' -ex bt":                    {"gdb", "a"},
		"gdb --eval-command='shell a'":           {"gdb", "a"},
		"gdb -ex shell":                          {"gdb!"},
		"gdb -ex 'python import os'":             {"gdb!"},
		"gdb -ex 'print system(\"a\")'":          {"gdb!"},
		"gdb -x cmds ./p":                        {"gdb!"},
		"gdb -batch -ex bt -ex 'info threads' p": {"gdb"},
		"sed '1e a' f":                           {"sed", "a"},
		"sed -n -e p -e '$e a; b' f":             {"sed", "a", "b"},
		"sed '/x/{e a\n}' f":                     {"sed", "a"},
		"sed 's/x/y/e' f":                        {"sed!"},
		"sed 's/x/y/ge' f":                       {"sed!"},
		"sed e f":                                {"sed!"},
		"sed -f s.sed f":                         {"sed!"},
		"sed --sandbox 's/x/y/e' f":              {"sed"},
		"sed 's/e/E/g; /e/d; y/e/f/' f":          {"sed"},
		"sed -e 's|a;e|b|' -e '/^#/d' f":         {"sed"},
		"sed 'a\\\nsome text e' f":               {"sed"},
		"sed '1i e x' f":                         {"sed"},
		"sed ':a;N;$!ba;s/\\n/ /g' f":            {"sed"},
		"zip -T -TT 'a x' z.zip f":               {"zip", "a"},
		"parallel a ::: 1 2":                     {"parallel", "a"},
		"parallel 'a {}; b' ::: 1":               {"parallel!", "a", "b"},
		"parallel < cmds":                        {"parallel!"},
		"vim -c '!a' f":                          {"vim!"},
		"vim +10 f":                              {"vim"},
		"vi +'!a' f":                             {"vi!"},
	}
	for src, want := range cases {
		if got := programsOf(Parse(src)); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}

// TestSedWrites: sed's w command and s///w flag write files.
func TestSedWrites(t *testing.T) {
	cs := Parse("sed -n 's/a/b/w /etc/out' f; sed 'w /tmp/x' f")
	var ws []string
	for _, c := range cs {
		for _, w := range c.Writes {
			ws = append(ws, w.Path)
		}
	}
	if strings.Join(ws, " ") != "/etc/out /tmp/x" {
		t.Fatalf("writes %v, want /etc/out and /tmp/x", ws)
	}
}

// TestMoreCodeRunners: lldb's shell and script commands, Python modules
// that run their arguments, and toybox as a wrapper.
func TestMoreCodeRunners(t *testing.T) {
	cases := map[string][]string{
		"lldb -b -o 'platform shell a; b' ./p":   {"lldb", "a", "b"},
		"lldb --one-line='script import os' ./p": {"lldb!"},
		"lldb -s cmds ./p":                       {"lldb!"},
		"lldb -b -o run -o bt ./p":               {"lldb"},
		"python3 -m timeit 'import os'":          {"python3!"},
		"python3 -mtimeit 'x'":                   {"python3!"},
		"python3 -m pytest -q":                   {"python3"},
		"toybox rm -rf /":                        {"toybox", "rm"},
	}
	for src, want := range cases {
		if got := programsOf(Parse(src)); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}

// TestEffectsNotHidden: a negated or alternative name test does not limit
// a find delete; multi-clause chmod modes, tee with empty input.
func TestEffectsNotHidden(t *testing.T) {
	cases := map[string][]string{
		"find d ! -name keep -delete":        {"recursive-delete:find -delete"},
		"find d -not -name '*.keep' -delete": {"recursive-delete:find -delete"},
		"find d -name '*.o' -o -delete":      {"recursive-delete:find -delete"},
		"find d -iname '[a-z]*' -delete":     {"recursive-delete:find -delete"},
		"find d -name '*.o' , -delete":       {"recursive-delete:find -delete"},
		"find d -name '*.o' -exec rm {} +":   nil,
		"chmod -R u=,g=,o= d":                {"wipe:chmod -R u=,g=,o="},
		"chmod -R go-rwx,u-rwx d":            {"wipe:chmod -R go-rwx,u-rwx"},
		"chmod -R 0333 d":                    {"wipe:chmod -R 0333"},
		"chmod -R go-rwx d":                  nil,
		"chmod -R 700 d":                     nil,
		"cat /dev/null | tee f":              {"wipe:tee with empty input"},
		"tee f < /dev/null":                  {"wipe:tee with empty input"},
		"echo x | tee f":                     nil,
		": | tee -a f":                       nil,
	}
	for src, want := range cases {
		if got := effectsOf(src); !slices.Equal(got, want) {
			t.Errorf("%q: effects %v, want %v", src, got, want)
		}
	}
	for src, want := range map[string][]string{
		"flock /tmp/l -- rm -rf /":        {"flock", "rm"},
		"zip -TT='a b' -T x.zip f":        {"zip", "a"},
		"git --config-env=core.pager=X l": {"git!"},
	} {
		if got := programsOf(Parse(src)); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}

// TestSessionsAndDatabases: terminal multiplexers, database shells, npm's
// exec and shells of other languages run command strings too.
func TestSessionsAndDatabases(t *testing.T) {
	cases := map[string][]string{
		"tmux new -d -s job 'a; b'":     {"tmux", "a", "b"},
		"tmux new-window -n w a x":      {"tmux", "a"},
		"tmux -c 'a'":                   {"tmux", "a"},
		"tmux run-shell -d 1 'a'":       {"tmux", "a"},
		"tmux send-keys -t 0 'a' Enter": {"tmux!"},
		"tmux ls":                       {"tmux"},
		"screen -dmS job a x":           {"screen", "a"},
		"sg wheel -c 'a; b'":            {"sg", "a", "b"},
		"sg wheel 'a'":                  {"sg", "a"},
		"sqlite3 x.db '.shell a'":       {"sqlite3", "a"},
		"sqlite3 -cmd '.system a' x.db": {"sqlite3", "a"},
		"sqlite3 x.db '.load ./ext'":    {"sqlite3!"},
		"sqlite3 x.db 'select 1'":       {"sqlite3"},
		"psql -c '\\! a' db":            {"psql", "a"},
		"psql -c 'select 1' db":         {"psql"},
		"mysql -e 'system a'":           {"mysql", "a"},
		"mysql --execute='\\! a'":       {"mysql", "a"},
		"npx -c 'a && b'":               {"npx", "a", "b"},
		"npm exec --call='a' ":          {"npm", "a"},
		"npm exec -- eslint .":          {"npm"},
		"xonsh -c 'a'":                  {"xonsh!"},
		"nu -c 'a'":                     {"nu!"},
		"osh -c 'a'":                    {"osh", "a"},
	}
	for src, want := range cases {
		if got := programsOf(Parse(src)); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}
