package tracing_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// stopped Tracer ends every goroutine its processor started.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
