package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) gateReviewCmd() *cobra.Command {
	var run string
	c := &cobra.Command{
		Use:   "review [--run RUN]",
		Short: "Walk the open gates in a terminal: [A]ccept, [E]dit, [S]kip, [D]eny",
		Long: `Show each open gate in turn, oldest first (as 'gate show' does), and ask
what to do with it: [A]ccept, [E]dit (type the new command; the change is
shown), [S]kip or [D]eny (type the reason), [N]ext to leave it open, [Q]uit.
Each answer is published at once, as the gate approve|edit|skip|deny
commands do. It needs a terminal on standard input; scripts use those
commands.`,
		Example: `  agentctl gate review
  agentctl gate review --run 0190a3c2`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !stdinTerminal(a.env.Stdin) {
				return api.WithHint(errors.New("gate review asks questions, and standard input is not a terminal"),
					"in scripts use agentctl gate ls, then gate approve|edit|skip|deny RUN STEP")
			}
			if a.output != formatText {
				return usagef("gate review: -o %s: review is interactive; gate ls -o %s lists the gates", a.output, a.output)
			}
			return a.gateReview(cmd.Context(), run)
		},
	}
	c.Flags().StringVar(&run, "run", "", "only the gates of this run (id, or a unique start or end of it)")
	return c
}

// gateReview walks the open gates, asking for an answer to each.
func (a *app) gateReview(ctx context.Context, run string) error {
	c, err := a.client()
	if err != nil {
		return err
	}
	gs, err := gates(ctx, c, api.GatesRequest{Run: run})
	if err != nil {
		return err
	}
	w := a.env.Stdout
	if len(gs) == 0 {
		fmt.Fprintln(w, "no open gates")
		return nil
	}
	in := bufio.NewReader(a.env.Stdin)
	answered := 0
	for i := range gs {
		g := &gs[i]
		fmt.Fprintf(w, "\ngate %d of %d\n", i+1, len(gs))
		a.printGate(w, g, time.Now())
		d, quit, err := a.ask(ctx, c, in, g)
		switch {
		case errors.Is(err, io.EOF) || quit:
			fmt.Fprintf(w, "%d answered, %d left open\n", answered, len(gs)-answered)
			return nil
		case err != nil:
			return err
		case d == nil:
			continue
		}
		if err := a.answer(ctx, g, *d); err != nil {
			// One refused answer does not end the review.
			fmt.Fprintf(a.env.Stderr, "error: %v\n", err)
			if h := api.HintOf(err); h != "" {
				fmt.Fprintf(a.env.Stderr, "hint: %s\n", h)
			}
			continue
		}
		answered++
	}
	fmt.Fprintf(w, "%d answered, %d left open\n", answered, len(gs)-answered)
	return nil
}

// ask prompts for the answer to g: nil for next, quit to stop.
func (a *app) ask(ctx context.Context, c *api.Client, in *bufio.Reader, g *api.Gate) (*event.GateDecidedData, bool, error) {
	w := a.env.Stdout
	for {
		fmt.Fprint(w, "[A]ccept [E]dit [S]kip [D]eny [N]ext [Q]uit? ")
		key, err := readLine(in)
		if err != nil {
			return nil, false, err
		}
		switch strings.ToLower(key) {
		case "a", "accept":
			return &event.GateDecidedData{Action: event.GateAccept}, false, nil
		case "e", "edit":
			fmt.Fprint(w, "new command: ")
			cmd, err := readLine(in)
			if err != nil {
				return nil, false, err
			}
			if cmd == "" {
				continue
			}
			if err := a.showEdit(ctx, c, g, cmd); err != nil {
				fmt.Fprintf(a.env.Stderr, "error: %v\n", err)
				continue
			}
			fmt.Fprint(w, "publish this edit? [y/N] ")
			yes, err := readLine(in)
			if err != nil {
				return nil, false, err
			}
			if strings.EqualFold(yes, "y") || strings.EqualFold(yes, "yes") {
				return &event.GateDecidedData{Action: event.GateEdit, Command: cmd}, false, nil
			}
		case "s", "skip", "d", "deny":
			action := event.GateSkip
			if strings.HasPrefix(strings.ToLower(key), "d") {
				action = event.GateDeny
			}
			reason := ""
			for reason == "" {
				fmt.Fprintf(w, "reason to %s (required): ", action)
				if reason, err = readLine(in); err != nil {
					return nil, false, err
				}
			}
			return &event.GateDecidedData{Action: action, Reason: reason}, false, nil
		case "n", "next":
			return nil, false, nil
		case "q", "quit":
			return nil, true, nil
		}
	}
}

// readLine reads one line without its end; io.EOF when input ends.
func readLine(in *bufio.Reader) (string, error) {
	s, err := in.ReadString('\n')
	if err != nil && (s == "" || !errors.Is(err, io.EOF)) {
		return "", err
	}
	return strings.TrimSpace(s), nil
}
