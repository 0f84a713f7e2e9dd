package fileedit

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bluekeyes/go-gitdiff/gitdiff"
	"pgregory.net/rapid"
)

// Every diff Unified writes parses and applies back to the new content —
// trailing newlines or not, files created or emptied.
func TestUnifiedRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := func(label string) string {
			lines := rapid.SliceOfN(rapid.SampledFrom([]string{"a", "b", "c", "d", ""}), 0, 40).Draw(t, label)
			s := strings.Join(lines, "\n")
			if len(lines) > 0 && rapid.Bool().Draw(t, label+"-nl") {
				s += "\n"
			}
			return s
		}
		a, b := text("a"), text("b")
		d := Unified("a/f", "b/f", []byte(a), []byte(b))
		if a == b {
			if d != "" {
				t.Fatalf("diff of equal contents: %q", d)
			}
			return
		}
		files, err := ParsePatch(d)
		if err != nil {
			t.Fatalf("diff does not parse: %v\n%s", err, d)
		}
		var out bytes.Buffer
		if err := gitdiff.Apply(&out, strings.NewReader(a), files[0].f); err != nil {
			t.Fatalf("diff does not apply: %v\n%s", err, d)
		}
		if out.String() != b {
			t.Fatalf("diff applied gives %q, want %q\n%s", out.String(), b, d)
		}
	})
}

// Past maxDiffD the diff is longer than needed but still correct.
func TestUnifiedLargeDistance(t *testing.T) {
	var a, b strings.Builder
	for i := 0; i < 2*maxDiffD+10; i++ {
		a.WriteString("a\n")
		b.WriteString("b\n")
	}
	d := Unified("a/f", "b/f", []byte(a.String()), []byte(b.String()))
	files, err := ParsePatch(d)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := gitdiff.Apply(&out, strings.NewReader(a.String()), files[0].f); err != nil || out.String() != b.String() {
		t.Fatalf("apply: %v", err)
	}
}

func TestUnifiedHunks(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n"
	b := "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\nFOURTEEN\n15\n"
	want := "--- a/f\n+++ b/f\n" +
		"@@ -1,5 +1,5 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n" +
		"@@ -11,5 +11,5 @@\n 11\n 12\n 13\n-14\n+FOURTEEN\n 15\n"
	if got := Unified("a/f", "b/f", []byte(a), []byte(b)); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}
