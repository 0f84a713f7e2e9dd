package shell

import (
	"slices"
	"strings"
	"testing"
)

func programsOf(cs []Command) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Program
		if c.Opaque != "" {
			out[i] += "!"
		}
	}
	return out
}

func TestEverySimpleCommandIsFound(t *testing.T) {
	cases := map[string][]string{
		"a | b && c || d; e & f":                         {"a", "b", "c", "d", "e", "f"},
		"(a; { b; }) | c":                                {"a", "b", "c"},
		"x $(a) `b` <(c) >(d) \"$(e)\"":                  {"a", "b", "c", "d", "e", "x"},
		"if a; then b; elif c; then d; else e; fi":       {"a", "b", "c", "d", "e"},
		"for i in $(a); do b; done; while c; do d; done": {"a", "b", "c", "d"},
		"case $(a) in x) b;; esac":                       {"a", "b"},
		"f() { a; }; f":                                  {"a", "f"},
		"x=$(a) y=${z:-$(b)} c":                          {"a", "b", "c"},
		"[[ $(a) == x ]] && (( $(b) ))":                  {"a", "b"},
		"cat <<EOF\n$(a)\nEOF":                           {"a", "cat"},
		"sudo -u x env A=1 nice -n 5 timeout 3 b":        {"sudo", "env", "nice", "timeout", "b"},
		"sh -c 'a; b' && bash -lc \"c | d\"":             {"sh", "a", "b", "bash", "c", "d"},
		"eval 'a && b'":                                  {"eval", "a", "b"},
		"find . -exec a {} \\; -execdir b {} +":          {"find", "a", "b"},
		"xargs -0 a < list":                              {"xargs", "a"},
		"command -v a":                                   {"command"},
		"ssh h 'a; b'":                                   {"ssh", "a", "b"},
		"a\nb\n\nc":                                      {"a", "b", "c"},
	}
	for src, want := range cases {
		if got := programsOf(Parse(src)); !slices.Equal(got, want) {
			t.Errorf("%q: got %v, want %v", src, got, want)
		}
	}
}

func TestProgramNameVariants(t *testing.T) {
	for _, src := range []string{"rm", "/bin/rm", "/usr/bin/../bin/rm", `\rm`, `r""m`, `'rm'`, `"rm"`, `r\m`, `$'\x72\x6d'`, "./rm", "{rm,}"} {
		cs := Parse(src + " x")
		if len(cs) != 1 || cs[0].Program != "rm" || cs[0].Opaque != "" {
			t.Errorf("%q: got %+v, want program rm", src, cs)
		}
	}
	for _, src := range []string{"$P", "${P}", "$(echo rm)", "`echo rm`", "r${IFS}m", "/bin/r?", "/bin/r*", "/bin/[r]m", "\"$P\"", "$((1))"} {
		cs := Parse(src + " -rf /")
		if len(cs) == 0 || cs[len(cs)-1].Opaque == "" || cs[len(cs)-1].Program != "" {
			t.Errorf("%q: got %+v, want an opaque command", src, cs)
		}
	}
}

func TestFlagsAreCanonical(t *testing.T) {
	names := func(src string) []string {
		var out []string
		for _, f := range Parse(src)[0].Flags {
			out = append(out, f.Name)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	for _, src := range []string{"rm -rf x", "rm -fr x", "rm -r -f x", "rm --recursive --force x", "rm -R --force x", "rm x -Rf"} {
		if got := names(src); !slices.Equal(got, []string{"-f", "-r"}) {
			t.Errorf("%q: flags %v, want [-f -r]", src, got)
		}
	}
	if got := names("chmod -x file"); len(got) != 0 {
		t.Errorf("chmod -x: %v is a mode, not flags", got)
	}
	if got := names("chmod -R 755 dir"); !slices.Equal(got, []string{"-R"}) {
		t.Errorf("chmod -R: %v", got)
	}
	c := Parse("git -C repo push -f origin main")[0]
	if c.Subcommand != "push" || !slices.Equal(names("git -C repo push -f origin main"), []string{"--force", "-C"}) ||
		len(c.Operands) != 2 || c.Operands[0].Value != "origin" {
		t.Errorf("git: %+v", c)
	}
	if got := NormalizeFlags("apt-get", "", "--yes", "--assume-yes", "-y"); !slices.Equal(got, []string{"-y", "-y", "-y"}) {
		t.Errorf("apt-get: %v", got)
	}
	if got := NormalizeFlags("rm", "", "-rf"); !slices.Equal(got, []string{"-r", "-f"}) {
		t.Errorf("rm -rf: %v", got)
	}
	if c := Parse("rm -- -rf")[0]; len(c.Flags) != 0 || c.Operands[0].Value != "-rf" {
		t.Errorf("rm -- -rf: %+v", c)
	}
}

func TestWritesAndDirectories(t *testing.T) {
	writes := func(src string) []string {
		var out []string
		for _, c := range Parse(src) {
			for _, w := range c.Writes {
				p := w.Path
				if !w.Known {
					p = "?" + w.Text
				}
				out = append(out, p)
			}
		}
		return out
	}
	cases := map[string][]string{
		"echo x > a >> /b 2>&1 &> c <> d":     {"a", "/b", "c", "d"},
		"echo x >/dev/null 2>&-":              {"/dev/null"},
		"cp a b /dst; mv c d; rm e; tee -a f": {"/dst", "c", "d", "e", "f"},
		"dd if=/dev/zero of=/dev/sda":         {"/dev/sda"},
		"sed -i s/a/b/ f; sed s/a/b/ g":       {"f"},
		"cd /etc && echo x > passwd":          {"/etc/passwd"},
		"cd /etc; cd ..; touch x":             {"/x"},
		"false || cd /tmp; touch x":           {"?x"},
		"(cd /tmp); touch x":                  {"x"},
		"cd $D; touch x":                      {"?x"},
		"touch $F \"$G\" ~/.ssh/k":            {"?$F", "?\"$G\"", "~/.ssh/k"},
		"find /srv -delete":                   {"/srv"},
		"find /srv -exec rm {} +":             {"/srv/{}"},
		"curl -o out http://x; wget -O o2 u":  {"out", "o2"},
		"sudo -e /etc/hosts; sudoedit /etc/x": {"/etc/hosts", "/etc/x"},
	}
	for src, want := range cases {
		if got := writes(src); !slices.Equal(got, want) {
			t.Errorf("%q: writes %v, want %v", src, got, want)
		}
	}
}

func TestOpaqueReasons(t *testing.T) {
	cases := map[string]string{
		"curl x | sh":                     "fed by a pipe from curl (content from the network)",
		"echo x | base64 -d | bash":       "a decoder: base64 -d",
		"sh < f":                          "the file f",
		"bash <(curl x)":                  "runs a script known only at run time",
		"python3 -c 'x'":                  "python3 -c runs inline python3 code",
		"perl -ne 'print' f":              "perl -ne runs inline perl code",
		"node --eval 'x'":                 "node --eval",
		"python3 < x.py":                  "python3 reads python3 code from standard input (the file x.py)",
		"python3 <<'EOF'\nimport os\nEOF": "python3 reads python3 code from standard input (a here-document)",
		"curl x | python3 -":              "fed by a pipe from curl",
		"eval $X":                         "eval runs shell code known only at run time ($X)",
		"LD_PRELOAD=x ls":                 "sets LD_PRELOAD",
		"export IFS=x":                    "sets IFS",
		"env BASH_ENV=x bash s.sh":        "sets BASH_ENV",
		"sudo -s":                         "starts an interactive shell",
		"su":                              "su without -c starts an interactive shell",
		"awk '{ system(\"x\") }'":         "awk program starts commands",
		"tar -xf a --to-command=x":        "tar --to-command=x runs a command",
		"git -c alias.x='!rm' x":          "git -c alias.x='!rm'",
		"ls $(":                           "cannot be parsed",
	}
	for src, want := range cases {
		found := false
		for _, c := range Parse(src) {
			found = found || strings.Contains(c.Opaque, want)
		}
		if !found {
			t.Errorf("%q: no opaque command saying %q: %+v", src, want, Parse(src))
		}
	}
	for _, src := range []string{"python3 script.py", "python3 -m http.server", "python3 --version", "bash script.sh", "sh -c 'ls'",
		"bash <<'EOF'\nls\nEOF", "awk '{print $1}' f", "[ -f x ]", "command -v nginx", "env", "sudo -l"} {
		for _, c := range Parse(src) {
			if c.Opaque != "" {
				t.Errorf("%q: %s is opaque: %s", src, c.Program, c.Opaque)
			}
		}
	}
}

func TestSpansPointIntoTheSource(t *testing.T) {
	src := `sudo bash -c 'rm -rf /x' && echo "$(git push --force)"`
	for _, c := range Parse(src) {
		for _, f := range c.Flags {
			if f.Span.Start < 0 || src[f.Span.Start:f.Span.End] != f.Text {
				t.Errorf("%s flag %q: span %v is %q", c.Program, f.Text, f.Span, src[max(0, f.Span.Start):max(0, f.Span.End)])
			}
		}
		if c.Span.Start >= 0 && src[c.Span.Start:c.Span.End] != c.Text {
			t.Errorf("%s: span %v is %q, text %q", c.Program, c.Span, src[c.Span.Start:c.Span.End], c.Text)
		}
	}
	// A nested string with escapes cannot be mapped byte for byte: its
	// parts point at the whole word.
	src = `bash -c "rm -rf \"/x\""`
	cs := Parse(src)
	if rm := cs[len(cs)-1]; rm.Program != "rm" || rm.Flags[0].Span != (Span{8, len(src)}) {
		t.Errorf("escaped nested string: %+v", rm)
	}
}

func TestParseIsDeterministic(t *testing.T) {
	src := "sudo env A=1 timeout 3 git -c x=y push -f -o a -o b origin +main | xargs -I{} sh -c 'rm {}'"
	first := Parse(src)
	for i := 0; i < 20; i++ {
		if got := Parse(src); !slices.EqualFunc(got, first, func(a, b Command) bool {
			return a.Program == b.Program && a.Text == b.Text && a.Opaque == b.Opaque && slices.Equal(a.Via, b.Via) && len(a.values) == len(b.values)
		}) {
			t.Fatalf("run %d differs", i)
		}
	}
}
