package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGossipKeyFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, path string
		size       int
		err        string
	}{
		{"32 bytes", write("k32", "  MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE=\n"), 32, ""},
		{"16 bytes", write("k16", "c2l4dGVlbi1ieXRlLWtleQ=="), 16, ""},
		{"24 bytes", write("k24", "dHdlbnR5LWZvdXItYnl0ZS1rZXkhISEh"), 24, ""},
		{"wrong size", write("k10", "MDEyMzQ1Njc4OQ=="), 0, "10 bytes: want the base64 of 16, 24 or 32"},
		{"not base64", write("bad", "not a key!"), 0, "not base64"},
		{"empty", write("empty", "\n"), 0, "empty"},
		{"too large", write("large", strings.Repeat("A", 5000)), 0, "larger than"},
		{"missing", filepath.Join(dir, "nope"), 0, "no such file"},
		{"directory", dir, 0, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, err := ReadGossipKey(tc.path)
			if tc.err == "" {
				if err != nil || len(key) != tc.size {
					t.Fatalf("ReadGossipKey = %d bytes, %v; want %d", len(key), err, tc.size)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("ReadGossipKey = %v, want an error saying %q", err, tc.err)
			}
			// Validate reports it under the file key, with the others.
			c := Default()
			c.GossipListen, c.GossipKeyFile = "127.0.0.1:7946", tc.path
			err = c.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "gossip_key_file: ") || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Validate = %v", err)
			}
		})
	}
	c := Default()
	c.GossipKeyFile = filepath.Join(dir, "k32")
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "gossip_key_file: needs gossip_listen") {
		t.Errorf("key without gossip: Validate = %v", err)
	}
	c.GossipListen = "127.0.0.1:7946"
	if err := c.Validate(); err != nil {
		t.Errorf("Validate = %v", err)
	}
}
