package fileedit

import (
	"errors"
	"testing"
)

// FuzzParsePatch: any text either parses into files with names, or is
// refused with ErrBadPatch; applying what parses to any content never
// panics.
func FuzzParsePatch(f *testing.F) {
	for _, s := range []string{
		"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
		"--- /dev/null\n+++ b/n\n@@ -0,0 +1,2 @@\n+a\n+b\n",
		"diff --git a/x b/x\ndeleted file mode 100644\n--- a/x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n",
		"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n",
		"@@ -1 +1 @@\n-a\n+b\n",
		"",
	} {
		f.Add(s, "a\nb\n")
	}
	f.Fuzz(func(t *testing.T, patch, content string) {
		files, err := ParsePatch(patch)
		if err != nil {
			if !errors.Is(err, ErrBadPatch) {
				t.Fatalf("error %v does not wrap ErrBadPatch", err)
			}
			return
		}
		for _, pf := range files {
			if pf.Path == "" {
				t.Fatalf("file without a name in %q", patch)
			}
			_, _ = pf.apply(state{exists: !pf.New, content: []byte(content)})
		}
	})
}
