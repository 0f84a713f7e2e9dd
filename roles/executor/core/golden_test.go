package core

import (
	"flag"
	"testing"

	"github.com/agentic-dev/agentic/internal/golden"
)

// rewrite regenerates the expected output of the golden scripts:
//
//	go test ./roles/executor/core -run Golden -rewrite
var rewrite = flag.Bool("rewrite", false, "rewrite testdata/*.txt with the actual output")

// TestGolden runs every testdata/*.txt script through the interpreter in
// script_test.go and compares each command's output with the expected one.
func TestGolden(t *testing.T) {
	golden.Run(t, *rewrite, func(t *testing.T) golden.Exec {
		sc := newScript(t)
		return sc.exec
	})
}
