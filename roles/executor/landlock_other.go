//go:build !linux

package executor

// landlockStatus says Landlock is not active: it exists on Linux only.
func landlockStatus() string { return "not active: Landlock is a Linux feature" }
