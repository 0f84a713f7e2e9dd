package apiwire

// MaxCommands caps the shapes one memory.commands answer carries.
const MaxCommands = 500

// CommandsRequest asks memory.commands for at most Limit shapes (default
// 50, at most MaxCommands) and Notes notes (default 10).
type CommandsRequest struct {
	Limit int `json:"limit,omitempty"`
	Notes int `json:"notes,omitempty"`
}

// CommandStat is how one command shape fared (roles/memory.Shapes).
type CommandStat struct {
	Shape     string `json:"shape"`
	Successes int    `json:"successes"`
	Failures  int    `json:"failures"`
}

// CommandStats is the answer to memory.commands.
type CommandStats struct {
	// Commands are the shapes, those that failed most first.
	Commands []CommandStat `json:"commands"`
	// Shapes is how many shapes the node counts in all; Overflow the
	// outcomes it did not count (beyond its bound).
	Shapes   int `json:"shapes"`
	Overflow int `json:"overflow,omitempty"`
	// Notes are the adaptive notes a planner's prompt carries.
	Notes []string `json:"notes"`
}
