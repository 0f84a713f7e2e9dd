package core

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// rewrite regenerates the expected output of the golden scripts:
//
//	go test ./roles/executor/core -run Golden -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

// block is one command of a golden script: comment lines before it, the
// command line, input lines, and the expected output after "----".
type block struct {
	pre   []string
	cmd   string
	input []string
	want  []string
	line  int
}

// parseScript splits a golden script into blocks. Expected output ends at
// the first blank line, so commands never print blank lines. Trailing
// comments come back as a block with no command.
func parseScript(text string) []block {
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

// formatScript writes blocks back, with got as each block's output.
func formatScript(blocks []block, got [][]string) string {
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

// TestGolden runs every testdata/*.txt script through the interpreter in
// script_test.go and compares each command's output with the expected one.
func TestGolden(t *testing.T) {
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
			blocks := parseScript(string(raw))
			sc := newScript(t)
			got := make([][]string, len(blocks))
			for i, bl := range blocks {
				if bl.cmd == "" {
					continue
				}
				got[i] = sc.exec(t, bl.cmd, bl.input)
				if !*rewrite && strings.Join(got[i], "\n") != strings.Join(bl.want, "\n") {
					t.Errorf("%s:%d: %s\n--- want\n%s\n--- got\n%s", file, bl.line, bl.cmd,
						strings.Join(bl.want, "\n"), strings.Join(got[i], "\n"))
				}
			}
			if *rewrite {
				if err := os.WriteFile(file, []byte(formatScript(blocks, got)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}
