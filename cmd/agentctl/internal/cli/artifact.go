package cli

import (
	"context"
	"errors"
	"fmt"

	"strconv"

	"github.com/agentic-dev/agentic/bus/artifact"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/node/api"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
)

func (a *app) artifactCmd() *cobra.Command {
	return group("artifact", "List and fetch the artifacts steps stored",
		`An artifact is a file a step declared in its outputs, stored when the step
succeeded in the JetStream Object Store under its sha256 and recorded by
the executor that ran it (artifact.stored). 'artifact ls' lists a run's;
'artifact get' writes one, verified against the sha256 the ledger recorded
(docs/artifacts.md).`,
		a.artifactLsCmd(), a.artifactGetCmd())
}

func (a *app) artifactLsCmd() *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:   "ls --run RUN",
		Short: "List a run's artifacts",
		Long: `List the artifacts of a run, by name: size, sha256, the step and attempt that
stored it, and its retention (run, or debug for a failed or cancelled
run's). Debug is a label only: every artifact's bytes are pruned 30 days
after they were stored (the bucket's age limit); fetch one with
'artifact get' to keep it.`,
		Example: `  agentctl artifact ls --run 0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d
  agentctl artifact ls --run 0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d -o json`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := event.ValidRunID(run); err != nil {
				return usagef("--run: %v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			fetch := func(ctx context.Context, cursor string) (*api.Page[api.Artifact], error) {
				return c.ArtifactsList(ctx, api.ArtifactsRequest{Run: run, CursorRequest: api.CursorRequest{Cursor: cursor}})
			}
			arts := []api.Artifact{}
			for x, err := range api.Walk(cmd.Context(), "", fetch) {
				if err != nil {
					return fmt.Errorf("artifact ls: %w", err)
				}
				arts = append(arts, x)
			}
			if a.output != formatText {
				return writeList(a, arts)
			}
			if len(arts) == 0 {
				fmt.Fprintln(a.env.Stdout, "no artifacts")
				return nil
			}
			tw := a.table()
			fmt.Fprintln(tw, "NAME\tSIZE\tSHA256\tSTEP\tRETENTION")
			for _, x := range arts {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%s#%d\t%s\n", x.Name, x.Size, x.SHA256, x.Step, x.Attempt, x.Retention)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "the run's id")
	return cmd
}

func (a *app) artifactGetCmd() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "get RUN NAME",
		Short: "Write an artifact, verified against its sha256",
		Long: `Write the artifact NAME of RUN to standard output, or to the file --out names,
verified against the sha256 and size the ledger recorded (read from a
signed answer). A stored object that does not match — tampered with or
corrupted — is refused with a non-zero exit and nothing written: with --out
nothing is at the path unless the whole artifact verified (it is written
beside it, then renamed); to standard output the artifact is first written
to a temporary file in the system's temp directory ($TMPDIR, else /tmp),
verified, and only then copied out — that directory needs the artifact's
size free (the Object Store keeps no digest per chunk, only per object).
Memory use stays small whatever the size.`,
		Example: `  agentctl artifact get 0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d report.md > report.md
  agentctl artifact get 0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d dist/app.tar.gz --out app.tar.gz`,
		Args: args(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, argv []string) error {
			run, name := argv[0], argv[1]
			if err := event.ValidRunID(run); err != nil {
				return usagef("RUN: %v", err)
			}
			c, err := a.client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			page, err := c.ArtifactsList(ctx, api.ArtifactsRequest{Run: run, Name: name})
			if err != nil {
				return fmt.Errorf("artifact get: %w", err)
			}
			if len(page.Items) != 1 || page.Items[0].Name != name {
				return fmt.Errorf("artifact get: run %s: no artifact %q in the answer", run, name)
			}
			x := page.Items[0]
			nc, err := a.conn()
			if err != nil {
				return err
			}
			js, err := jetstream.New(nc)
			if err != nil {
				return fmt.Errorf("jetstream: %w", err)
			}
			st, err := artifact.Open(ctx, js)
			if err != nil {
				return fmt.Errorf("artifact get: %w", err)
			}
			if out != "" {
				err = st.GetFile(ctx, x.SHA256, x.Size, x.Object, out, 0o644)
			} else {
				_, err = st.GetVerified(ctx, x.SHA256, x.Size, x.Object, "", a.env.Stdout)
			}
			return artifactGetError(run, x, err)
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "write to this file (renamed into place only once verified) instead of standard output")
	return cmd
}

// artifactGetError says what a failed get means for the operator.
func artifactGetError(run string, x api.Artifact, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, artifact.ErrTampered):
		return api.WithHint(fmt.Errorf("artifact get: %s of run %s refused: %w", x.Name, run, err),
			"the Object Store's copy differs from what step "+x.Step+" stored (ledger seq "+strconv.FormatUint(x.Seq, 10)+"): do not use it; run the step again to store it anew")
	case errors.Is(err, artifact.ErrNotFound):
		return api.WithHint(fmt.Errorf("artifact get: %s of run %s: %w", x.Name, run, err),
			"its bytes were pruned (the artifact bucket's age limit) or lost")
	}
	return fmt.Errorf("artifact get: %s of run %s: %w", x.Name, run, err)
}
