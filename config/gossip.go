package config

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// GossipKeySizes are the sizes (bytes) a gossip key may have: AES-128,
// AES-192 or AES-256.
var GossipKeySizes = []int{16, 24, 32}

// maxGossipKeyFile bounds what is read of a key file: a key is at most 44
// characters of base64.
const maxGossipKeyFile = 4 << 10

const gossipKeyHint = "want the base64 of 16, 24 or 32 random bytes, made with: head -c 32 /dev/urandom | base64 > gossip.key"

// ReadGossipKey reads the gossip encryption key from the file at path:
// the standard base64 of 16, 24 or 32 bytes, whitespace around it
// ignored. Every node of a cluster uses the same key.
func ReadGossipKey(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read gossip key: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("read gossip key: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("gossip key %s is not a regular file", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxGossipKeyFile+1))
	if err != nil {
		return nil, fmt.Errorf("read gossip key %s: %w", path, err)
	}
	if len(b) > maxGossipKeyFile {
		return nil, fmt.Errorf("gossip key %s: larger than %d bytes: %s", path, maxGossipKeyFile, gossipKeyHint)
	}
	key, err := ParseGossipKey(string(b))
	if err != nil {
		return nil, fmt.Errorf("gossip key %s: %w", path, err)
	}
	return key, nil
}

// ParseGossipKey decodes a gossip key: standard base64 of 16, 24 or 32
// bytes, whitespace around it ignored.
func ParseGossipKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("empty: " + gossipKeyHint)
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, errors.New("not base64: " + gossipKeyHint)
	}
	for _, n := range GossipKeySizes {
		if len(key) == n {
			return key, nil
		}
	}
	return nil, fmt.Errorf("%d bytes: %s", len(key), gossipKeyHint)
}
