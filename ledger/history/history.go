// Package history is what `agentctl keys verify-history` needs of the
// ledger without linking it: the report of an exported ledger's offline
// verification and a way to obtain it from agentd.
//
// Verifying an export means importing it into a temporary ledger (Pebble)
// and walking its chain there (ledger.VerifyHistory); a CLI that linked
// Pebble would pay its start-up (package initialisation, Prometheus,
// a larger binary) on every invocation. So agentctl asks agentd, a
// separate process that links the ledger anyway: `agentd verify-history
// --genesis ROOT_PUB FILE` prints the Report as JSON (Exec runs it).
//
// Invariants:
//
//  1. The verification is the ledger's own (ledger.Store.Verify over an
//     import), never a second implementation of the chain's rules.
//  2. A Report that says !OK is an answer, not an error: Exec returns an
//     error only when no report came back (agentd missing, a file it
//     cannot read), with agentd's words.
package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Report is the outcome of verifying an exported ledger offline.
type Report struct {
	OK          bool   `json:"ok"`
	Events      uint64 `json:"events"`
	Head        string `json:"head"`
	FirstBadSeq uint64 `json:"first_bad_seq,omitempty"`
	Error       string `json:"error,omitempty"`
	Roots       []Root `json:"roots"`
}

// Root is a root a ledger knows (ledger.TrustedRoot is this type).
type Root struct {
	KeyID string `json:"key_id"`
	// Key is its public key, base64url ("" for the genesis when the store
	// was not given it).
	Key     string `json:"key,omitempty"`
	Genesis bool   `json:"genesis,omitempty"`
	// AddedStream and RetiredStream are the stream seqs of the records
	// that added and retired it (0: the genesis; not retired).
	AddedStream   uint64 `json:"added_stream,omitempty"`
	RetiredStream uint64 `json:"retired_stream,omitempty"`
}

// Command is agentd's argument that verifies an export: `agentd
// verify-history --genesis ROOT_PUB FILE`.
const Command = "verify-history"

// ErrNoAgentd is returned by Exec when no agentd binary is found.
var ErrNoAgentd = errors.New("history: agentd not found (keys verify-history runs agentd's ledger: install agentd next to agentctl or on PATH, or set AGENTIC_AGENTD)")

// Agentd finds the agentd binary: $AGENTIC_AGENTD (getenv), else agentd
// next to the running executable, else agentd on PATH.
func Agentd(getenv func(string) string) (string, error) {
	if p := getenv("AGENTIC_AGENTD"); p != "" {
		return p, nil
	}
	if self, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(self), "agentd")
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	p, err := exec.LookPath("agentd")
	if err != nil {
		return "", ErrNoAgentd
	}
	return p, nil
}

// Exec verifies the export at file with the genesis root public key at
// genesisPath by running agentd (Agentd) and reading its Report.
func Exec(ctx context.Context, getenv func(string) string, file, genesisPath string) (Report, error) {
	agentd, err := Agentd(getenv)
	if err != nil {
		return Report{}, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, agentd, Command, "--genesis", genesisPath, "--", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			msg = strings.TrimPrefix(strings.TrimPrefix(msg, "agentd: "), Command+": ")
			return Report{}, fmt.Errorf("history: %s %s: %s", agentd, Command, msg)
		}
		return Report{}, fmt.Errorf("history: %s: %w", agentd, err)
	}
	var rep Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		return Report{}, fmt.Errorf("history: %s %s printed no report (is it an older agentd?): %w", agentd, Command, err)
	}
	return rep, nil
}
