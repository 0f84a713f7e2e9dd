package apiwire

import "time"

// Artifact query methods (docs/artifacts.md).
const (
	// MethodArtifactsList pages through a run's artifacts by name
	// (ArtifactsRequest → Page of Artifact). An agentctl artifact get
	// reads the sha256 it verifies the bytes against from this signed
	// answer.
	MethodArtifactsList = "artifacts.list"
)

// Page sizes of artifacts.list.
const (
	DefaultArtifactsPage = 100
	MaxArtifactsPage     = 1000
)

// ArtifactsRequest asks for a page of a run's artifacts; Name, when set,
// asks for that one artifact alone.
type ArtifactsRequest struct {
	CursorRequest
	Run  string `json:"run"`
	Name string `json:"name,omitempty"`
}

// Artifact is one stored artifact of a run (artifact.stored as the
// ledger folded it).
type Artifact struct {
	Run     string `json:"run"`
	Name    string `json:"name"`
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
	Object  string `json:"object"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	// Retention is "run", or "debug" for a failed or cancelled run's.
	Retention string            `json:"retention"`
	Meta      map[string]string `json:"meta,omitempty"`
	// Seq is the ledger position of its artifact.stored; At its time.
	Seq uint64    `json:"seq"`
	At  time.Time `json:"at"`
}
