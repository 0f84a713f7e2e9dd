package cli

import (
	"fmt"
	"text/tabwriter"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/spf13/cobra"
)

func (a *app) plannerCmd() *cobra.Command {
	return group("planner", "What the planner learns from history",
		"A memory node counts how each command shape fared (program, subcommand and\nflags, operands left out); the planner's prompts carry notes made from the\nshapes that fail often, so plans avoid them.",
		a.plannerStatsCmd())
}

func (a *app) plannerStatsCmd() *cobra.Command {
	var limit int
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Commands that fail often, and the notes the planner gets",
		Long: `Show the command statistics a memory node keeps — by shape: "apt-get
install -y" and "apt-get -y install curl" are one shape, "apt-get install"
another — those that failed most first, and the adaptive notes the
planner's prompt carries ("` + "`apt-get install` without -y failed 4 of 5 times;\nwith -y it succeeded 5 of 5" + `"). Only logic failures count: a timeout or a
lost node says nothing about the command.`,
		Example: `  agentctl planner stats
  agentctl planner stats --limit 200 -o json | jq '.commands[] | select(.failures > 10)'`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := a.client()
			if err != nil {
				return err
			}
			st, err := c.MemoryCommands(cmd.Context(), api.CommandsRequest{Limit: limit})
			if err != nil {
				return err
			}
			if a.output != formatText {
				return a.writeJSON(st)
			}
			w := a.env.Stdout
			if len(st.Notes) == 0 {
				fmt.Fprintln(w, "notes: none (no command has failed often enough)")
			} else {
				fmt.Fprintln(w, "notes the planner gets:")
				for _, n := range st.Notes {
					fmt.Fprintf(w, "  - %s\n", n)
				}
			}
			fmt.Fprintf(w, "\n%d command shapes counted", st.Shapes)
			if st.Overflow > 0 {
				fmt.Fprintf(w, " (%d outcomes of further shapes not counted)", st.Overflow)
			}
			fmt.Fprintln(w)
			if len(st.Commands) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "FAILED\tSUCCEEDED\tCOMMAND")
			for _, c := range st.Commands {
				fmt.Fprintf(tw, "%d\t%d\t%s\n", c.Failures, c.Successes, c.Shape)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 20, fmt.Sprintf("shapes to show, those that failed most first (at most %d)", api.MaxCommands))
	return cmd
}
