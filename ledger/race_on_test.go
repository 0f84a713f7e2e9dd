//go:build race

package ledger

// raceEnabled: the race detector is on (tests that only measure skip).
const raceEnabled = true
