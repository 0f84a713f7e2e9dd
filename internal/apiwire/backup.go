package apiwire

import "time"

// MethodNodeBackup asks one node (Client.At) to write an online backup of
// its data directory on its own machine.
const MethodNodeBackup = "node.backup"

// BackupTimeout bounds a backup request: the node copies its stores and
// streams before it answers.
const BackupTimeout = 30 * time.Minute

// BackupRequest is the request of node.backup.
type BackupRequest struct {
	// Out is the backup directory on the node's machine: an absolute path
	// that does not exist yet.
	Out string `json:"out"`
	// NoArtifacts leaves the artifact bucket out of the backup (it may be
	// large): the backup then says so (BackupResult.ArtifactsOmitted).
	NoArtifacts bool `json:"no_artifacts,omitempty"`
}

// BackupStream is one stream snapshot of a backup.
type BackupStream struct {
	Name     string `json:"name"`
	Messages uint64 `json:"messages"`
	LastSeq  uint64 `json:"last_seq"`
}

// BackupResult is what a node.backup wrote.
type BackupResult struct {
	Node string `json:"node"`
	// Dir is the backup directory on the node's machine.
	Dir string `json:"dir"`
	// LedgerSeq and LedgerApplied are the ledger copy's head and the
	// stream seq it folded up to.
	LedgerSeq     uint64 `json:"ledger_seq"`
	LedgerApplied uint64 `json:"ledger_applied"`
	// Stores are the Pebble copies, Files the data dir files copied.
	Stores []string `json:"stores"`
	Files  []string `json:"files"`
	// Streams are the stream snapshots; StreamsOmitted says why there are
	// none.
	Streams        []BackupStream `json:"streams,omitempty"`
	StreamsOmitted string         `json:"streams_omitted,omitempty"`
	// ArtifactsOmitted says why the artifact bucket is not among the
	// streams although the others are (empty: it is, or there are none).
	ArtifactsOmitted string `json:"artifacts_omitted,omitempty"`
	// Took is how long the backup took.
	Took time.Duration `json:"took"`
}
