package policy

import "testing"

func TestArtifactBudgets(t *testing.T) {
	p, err := Parse([]byte("name: p\nbudgets: {artifact_bytes: 512MiB, run_artifact_bytes: 2000000000}\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, r := p.Budgets.ArtifactCaps(); a != 512<<20 || r != 2e9 {
		t.Fatalf("caps %d, %d", a, r)
	}
	d, err := Parse([]byte("name: p\n"), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if a, r := d.Budgets.ArtifactCaps(); a != DefaultArtifactBytes || r != DefaultRunArtifactBytes {
		t.Fatalf("default caps %d, %d", a, r)
	}
	if d.Hash() == p.Hash() {
		t.Fatal("the caps are not in the hash")
	}
	if _, err := Parse([]byte("name: p\nbudgets: {artifact_bytes: lots}\n"), "p.yaml"); err == nil {
		t.Fatal("a bad size was taken")
	}
}
