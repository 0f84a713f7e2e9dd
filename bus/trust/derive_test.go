package trust

import (
	"bytes"
	"testing"
	"time"
)

func TestDeriveSeed(t *testing.T) {
	root, err := NewRoot()
	if err != nil {
		t.Fatal(err)
	}
	a, err := root.DeriveSeed("p/1")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := root.DeriveSeed("p/1")
	c, _ := root.DeriveSeed("p/2")
	if len(a) != 32 || !bytes.Equal(a, b) {
		t.Fatalf("derivation not deterministic: %x %x", a, b)
	}
	if bytes.Equal(a, c) {
		t.Fatal("two purposes derived the same seed")
	}
	if bytes.Equal(a, root.private.Seed()) {
		t.Fatal("derived seed is the root seed")
	}
	other, _ := NewRoot()
	if o, _ := other.DeriveSeed("p/1"); bytes.Equal(a, o) {
		t.Fatal("two roots derived the same seed")
	}
	if _, err := (&Root{Public: root.Public}).DeriveSeed("p/1"); err == nil {
		t.Fatal("a verify-only root derived a seed")
	}
	if _, err := root.DeriveSeed(""); err == nil {
		t.Fatal("an empty purpose was accepted")
	}
	id, err := NewIdentity(root, "n1", KindNode, []string{"executor"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	i1, _ := id.DeriveSeed("p/1")
	if bytes.Equal(i1, a) {
		t.Fatal("an identity derived its root's seed")
	}
	if _, err := (&Identity{ID: "x"}).DeriveSeed("p/1"); err == nil {
		t.Fatal("an identity without a key derived a seed")
	}
}
