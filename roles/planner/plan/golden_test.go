package plan

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.golden from the current output")

// TestNormalizeGolden parses each testdata plan and compares the normalized
// plan, as JSON, with its .golden file. Run with -rewrite to regenerate
// after an intended change, and review the diff.
func TestNormalizeGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, in := range inputs {
		if strings.HasSuffix(in, ".golden") {
			continue
		}
		n++
		t.Run(filepath.Base(in), func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			p, err := Parse(filepath.Base(in), data)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := json.MarshalIndent(p, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := strings.TrimSuffix(in, filepath.Ext(in)) + ".golden"
			if *rewrite {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -rewrite to create it)", err)
			}
			if string(got) != string(want) {
				t.Errorf("normalized plan differs from %s (run with -rewrite if intended)\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
	if n < 4 {
		t.Fatalf("found %d testdata plans, want at least 4", n)
	}
}
