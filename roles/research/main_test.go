package research_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a goroutine outlives its tests: a
// fetch leaves no connection (and its reader and writer goroutines)
// behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
