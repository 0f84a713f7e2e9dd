package research

import "github.com/agentic-dev/agentic/bus/event"

// SourceText is a fetched source as a synthesis reads it: its record and
// its text (Text).
type SourceText struct {
	Source event.ResearchSource
	Text   string
}

// Note is a note as the model gives it, checked against the schema; its
// citations are not yet checked against the sources.
type Note struct {
	// Question is the index of the question it answers.
	Question   int        `json:"question"`
	Claim      string     `json:"claim"`
	Confidence float64    `json:"confidence"`
	Critical   bool       `json:"critical"`
	Citations  []NoteCite `json:"citations"`
}

// NoteCite is a citation as the model gives it: a source by its number
// in the prompt or its sha256, and a quote.
type NoteCite struct {
	Source int    `json:"source"`
	SHA256 string `json:"sha256"`
	Quote  string `json:"quote"`
}
