package telemetry_test

import (
	"fmt"
	"os"
	"strconv"
	"testing"
)

// TestMain runs the test binary as BenchmarkExport1M's child process when
// the benchmark starts it (childEnv set to the number of events), else
// the tests.
func TestMain(m *testing.M) {
	if v := os.Getenv(childEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err == nil {
			err = exportChild(n)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "export child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
