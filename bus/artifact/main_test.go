package artifact_test

import (
	"fmt"
	"os"
	"testing"
)

// TestMain runs the test binary as TestLargeRoundTrip's client process
// when that test starts it (ARTIFACT_TEST_URL set), else the tests.
func TestMain(m *testing.M) {
	if url := os.Getenv("ARTIFACT_TEST_URL"); url != "" {
		if err := largeClient(url, os.Getenv("ARTIFACT_TEST_DIR")); err != nil {
			fmt.Fprintln(os.Stderr, "artifact client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
