// Package golden runs golden scripts: text files of commands, each with
// its input lines and, after a "----" line, the output it must print, up
// to the next blank line. The pure cores (roles/orchestrator/core,
// roles/executor/core) are tested by such scripts in their testdata; each
// brings its own interpreter of commands.
//
// A script's lines that start with "#", and blank lines between blocks,
// are comments and are kept when the expected outputs are rewritten (the
// -rewrite flag of the test that calls Run).
package golden

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Exec runs one command of a script with its input lines and returns the
// lines it printed. Output never holds a blank line: a blank line ends a
// block's expected output.
type Exec func(t *testing.T, cmd string, input []string) []string

// block is one command of a golden script: comment lines before it, the
// command line, input lines, and the expected output after "----".
type block struct {
	pre   []string
	cmd   string
	input []string
	want  []string
	line  int
}

// parse splits a golden script into blocks. Expected output ends at the
// first blank line. Trailing comments come back as a block with no
// command.
func parse(text string) []block {
	var out []block
	var cur block
	state := 0 // 0: between blocks, 1: input, 2: output
	for i, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
		switch state {
		case 0:
			if line == "" || strings.HasPrefix(line, "#") {
				cur.pre = append(cur.pre, line)
				continue
			}
			cur.cmd, cur.line, state = line, i+1, 1
		case 1:
			if line == "----" {
				state = 2
				continue
			}
			cur.input = append(cur.input, line)
		case 2:
			if line == "" {
				out = append(out, cur)
				cur, state = block{}, 0
				continue
			}
			cur.want = append(cur.want, line)
		}
	}
	if state != 0 || len(cur.pre) > 0 {
		out = append(out, cur)
	}
	return out
}

// format writes blocks back, with got as each block's output.
func format(blocks []block, got [][]string) string {
	var b strings.Builder
	for i, bl := range blocks {
		for _, l := range bl.pre {
			b.WriteString(l + "\n")
		}
		if bl.cmd == "" {
			continue
		}
		b.WriteString(bl.cmd + "\n")
		for _, l := range bl.input {
			b.WriteString(l + "\n")
		}
		b.WriteString("----\n")
		for _, l := range got[i] {
			b.WriteString(l + "\n")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Run runs every testdata/*.txt script of the calling package, one subtest
// each: newExec gives each script a fresh interpreter, and each command's
// output is compared with the expected one. With rewrite, the scripts'
// expected outputs are replaced by the actual ones instead.
func Run(t *testing.T, rewrite bool, newExec func(t *testing.T) Exec) {
	t.Helper()
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden scripts: %v", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".txt"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			blocks := parse(string(raw))
			exec := newExec(t)
			got := make([][]string, len(blocks))
			for i, bl := range blocks {
				if bl.cmd == "" {
					continue
				}
				got[i] = exec(t, bl.cmd, bl.input)
				if !rewrite && strings.Join(got[i], "\n") != strings.Join(bl.want, "\n") {
					t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", file, bl.line, bl.cmd,
						strings.Join(bl.want, "\n"), strings.Join(got[i], "\n"))
				}
			}
			if rewrite {
				if err := os.WriteFile(file, []byte(format(blocks, got)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
