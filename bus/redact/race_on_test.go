//go:build race

package redact

// raceEnabled shortens the randomized tests under the race detector.
const raceEnabled = true
