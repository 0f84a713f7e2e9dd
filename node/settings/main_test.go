package settings_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// nats.go's global timer pool is process-wide, not per node.
		goleak.IgnoreTopFunction("github.com/nats-io/nats.go.(*timeoutPool).run"),
	)
}
