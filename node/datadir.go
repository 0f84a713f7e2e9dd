package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// DataFormat is the layout version of a node's data directory: which
// stores live where (ledger/, outbox/, executor/, nats/, keys). It is
// written to DATA/FORMAT and checked before anything else opens, so that an
// agentd never opens a directory laid out by a newer version (a rollback
// after an upgrade that moved things) and an older layout is upgraded in
// one known place. Each store also pins its own format (ledger meta/format,
// Pebble's format major version).
const DataFormat = 1

// FormatFile is the name of the layout version file in the data directory.
const FormatFile = "FORMAT"

const formatPrefix = "agentic-data "

// ErrDataFormat: the data directory was laid out by another version.
var ErrDataFormat = errors.New("node: unsupported data directory layout")

// checkDataDir reads DATA/FORMAT. A directory without it is new, or was
// written before the file existed (layout 1): the file is written. A newer
// layout is refused with the way out; an older one would be upgraded here.
func checkDataDir(dir string) error {
	path := filepath.Join(dir, FormatFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return writeDataFormat(path)
	case err != nil:
		return fmt.Errorf("node: read %s: %w", path, err)
	}
	v, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(b), formatPrefix)))
	if !strings.HasPrefix(string(b), formatPrefix) || err != nil {
		return fmt.Errorf("%w: %s does not hold a layout version (%q); is this an agentd data directory?", ErrDataFormat, path, strings.TrimSpace(string(b)))
	}
	switch {
	case v > DataFormat:
		return fmt.Errorf("%w: %s has layout %d, this agentd reads layouts up to %d: run the newer agentd that wrote it, or restore the backup taken before that upgrade", ErrDataFormat, dir, v, DataFormat)
	case v < 1:
		return fmt.Errorf("%w: %s has layout %d, which no agentd wrote", ErrDataFormat, path, v)
	}
	// v == DataFormat: nothing to upgrade yet.
	return nil
}

func writeDataFormat(path string) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(formatPrefix+strconv.Itoa(DataFormat)+"\n"), 0o600); err != nil {
		return fmt.Errorf("node: write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("node: write %s: %w", path, err)
	}
	return nil
}
