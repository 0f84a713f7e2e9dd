package apiwire

// Page sizes of gates.list: a request's limit is clamped to the maximum; 0
// asks for the default.
const (
	DefaultGatesPage = 100
	MaxGatesPage     = 1000
)
