package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

// Exit codes.
const (
	// ExitOK: the command did what was asked.
	ExitOK = 0
	// ExitError: the command failed (one "error:" line on stderr, maybe a
	// "hint:" line), or ledger verify found a bad chain.
	ExitError = 1
	// ExitUsage: the command line was wrong.
	ExitUsage = 2
	// ExitRunFailed: goal submit --wait saw the run fail.
	ExitRunFailed = 3
	// ExitRunCancelled: goal submit --wait saw the run cancelled.
	ExitRunCancelled = 4
	// ExitUnconfirmed: a write reached the stream but no ledger node said
	// within --timeout whether it accepted it (it may still).
	ExitUnconfirmed = 5
	// ExitInterrupted: Ctrl-C (the context was cancelled) during a command
	// that was not following a stream.
	ExitInterrupted = 130
)

// Env is what the CLI takes from its process, so tests run it in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads the environment (os.Getenv when nil).
	Getenv func(string) string
	// Version is agentctl's version ("" reads the build info).
	Version string
}

// Run executes agentctl with args (without the program name) and returns
// the exit code. Cancelling ctx is Ctrl-C: followers stop cleanly.
func Run(ctx context.Context, args []string, env Env) int {
	a := newApp(env)
	defer a.close()
	// Every text output escapes control characters (terminal.go); JSON
	// output on stdout is written as it is.
	stdout := newTermWriter(a.env.Stdout, func() bool { return a.output == formatText })
	stderr := newTermWriter(a.env.Stderr, nil)
	a.env.Stdout, a.env.Stderr = stdout, stderr
	defer func() { _, _ = stdout.Flush(), stderr.Flush() }()
	root := a.rootCmd()
	if args == nil {
		args = []string{}
	}
	root.SetArgs(args)
	root.SetIn(a.env.Stdin)
	root.SetOut(a.env.Stdout)
	root.SetErr(a.env.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if cmd == nil {
		cmd = root
	}
	return a.report(ctx, cmd, err)
}

func (e *Env) fill() {
	if e.Stdin == nil {
		e.Stdin = os.Stdin
	}
	if e.Stdout == nil {
		e.Stdout = os.Stdout
	}
	if e.Stderr == nil {
		e.Stderr = os.Stderr
	}
	if e.Getenv == nil {
		e.Getenv = os.Getenv
	}
}

// usageError marks a wrong command line (exit 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// exitError ends the command with code; err (if any) is printed.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// report prints err and returns the exit code.
func (a *app) report(ctx context.Context, cmd *cobra.Command, err error) int {
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			a.printError(ee.err)
		}
		return ee.code
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(a.env.Stderr, "interrupted")
		return ExitInterrupted
	}
	var ue *usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		fmt.Fprintf(a.env.Stderr, "error: %v\n", err)
		fmt.Fprintf(a.env.Stderr, "run '%s --help' for usage\n", cmd.CommandPath())
		return ExitUsage
	}
	a.printError(err)
	return ExitError
}

func (a *app) printError(err error) {
	fmt.Fprintf(a.env.Stderr, "error: %v\n", err)
	if h := api.HintOf(err); h != "" {
		fmt.Fprintf(a.env.Stderr, "hint: %s\n", h)
	}
}

// isCobraUsage recognises the usage errors cobra makes itself.
func isCobraUsage(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "unknown command ") || strings.HasPrefix(s, "unknown flag") ||
		strings.HasPrefix(s, "unknown shorthand flag") || strings.HasPrefix(s, "invalid argument ") ||
		strings.HasPrefix(s, "flag needs an argument") || strings.HasPrefix(s, "bad flag syntax")
}

// args wraps a cobra positional-argument check so it is a usage error.
func args(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := check(cmd, a); err != nil {
			return &usageError{fmt.Errorf("%s: %w", cmd.CommandPath(), err)}
		}
		return nil
	}
}

// group is a command that only holds subcommands: an unknown subcommand is
// a usage error, no subcommand shows the help.
func group(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, a []string) error {
			if len(a) > 0 {
				return usagef("unknown command %q for %q", a[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	c.AddCommand(subs...)
	return c
}

// pollInterval is how often goal submit --wait asks for the run.
const pollInterval = 200 * time.Millisecond
