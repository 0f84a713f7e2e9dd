package cli

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/agentic-dev/agentic/node/api"
	"github.com/agentic-dev/agentic/roles/orchestrator/core"
)

// renderRun prints a run as a header and a step table grouped by subgoal:
//
//	run       0190a3c2-…
//	goal      deploy the app
//	status    running (revision 1)
//	created   2026-01-02 12:00:00   finished -
//
//	STEP          STATUS     ATTEMPT  NODE    EXIT  DURATION  NEEDS
//	build
//	├─ compile    succeeded  1        node-a  0     1.2s      -
//	└─ test       running    1        node-b  -     3.4s      compile
func renderRun(w io.Writer, r *api.Run, now time.Time) error {
	fmt.Fprintf(w, "run       %s\n", r.ID)
	fmt.Fprintf(w, "goal      %s\n", r.Goal)
	fmt.Fprintf(w, "status    %s (revision %d)\n", r.Status, r.Revision)
	if r.Reason != "" {
		fmt.Fprintf(w, "reason    %s\n", r.Reason)
	}
	fmt.Fprintf(w, "created   %s   finished %s\n", fmtTime(r.CreatedAt), fmtTimePtr(r.FinishedAt))
	renderRatings(w, r)
	if len(r.Steps) == 0 {
		fmt.Fprintln(w, "\n(no plan yet)")
		return nil
	}
	fmt.Fprintln(w)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tATTEMPT\tNODE\tEXIT\tDURATION\tNEEDS")
	for _, g := range groupBySubgoal(r.Steps) {
		prefix := func(int) string { return "" }
		if g.name != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\n", g.name)
			prefix = func(i int) string {
				if i == len(g.steps)-1 {
					return "└─ "
				}
				return "├─ "
			}
		}
		for i, s := range g.steps {
			fmt.Fprintf(tw, "%s%s\t%s\t%s\t%s\t%s\t%s\t%s\n", prefix(i), s.ID, s.Status, attempt(s.Attempt),
				dash(s.Node), exitCode(s.ExitCode), fmtSpan(s.StartedAt, s.FinishedAt, now), depsCell(s.DependsOn))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// Subgoal rows have empty cells that tabwriter pads: trim them.
	for _, line := range strings.Split(strings.TrimSuffix(table.String(), "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	for _, s := range r.Steps {
		if s.Error != "" {
			fmt.Fprintf(w, "\n%s (attempt %d): %s", s.ID, s.Attempt, s.Error)
		}
		if s.Reassigned > 0 {
			fmt.Fprintf(w, "\n%s: %s", s.ID, earlierAttempts(r.Revision, s))
		}
		if s.Wait != "" {
			fmt.Fprintf(w, "\n%s waits: %s", s.ID, s.Wait)
		}
		if c := s.Critique; c != nil {
			fmt.Fprintf(w, "\n%s verdict: %s", s.ID, critiqueLine(c))
		}
	}
	if hasErrors(r.Steps) {
		fmt.Fprintln(w)
	}
	return nil
}

type subgoalGroup struct {
	name  string
	steps []api.Step
}

// groupBySubgoal keeps the run's step order, gathering each subgoal's steps
// where the subgoal first appears; steps without a subgoal stand alone.
func groupBySubgoal(steps []api.Step) []subgoalGroup {
	var out []subgoalGroup
	idx := map[string]int{}
	for _, s := range steps {
		if s.Subgoal == "" {
			out = append(out, subgoalGroup{steps: []api.Step{s}})
			continue
		}
		i, ok := idx[s.Subgoal]
		if !ok {
			i = len(out)
			idx[s.Subgoal] = i
			out = append(out, subgoalGroup{name: s.Subgoal})
		}
		out[i].steps = append(out[i].steps, s)
	}
	return out
}

func attempt(n int) string {
	if n == 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func exitCode(c *int) string {
	if c == nil {
		return "-"
	}
	return strconv.Itoa(*c)
}

func hasErrors(steps []api.Step) bool {
	for _, s := range steps {
		if s.Error != "" || s.Reassigned > 0 || s.Wait != "" || s.Critique != nil {
			return true
		}
	}
	return false
}

// critiqueLine shows a critique step's verdict: pass or fail with the
// judgement, or error with why there is none.
func critiqueLine(c *core.Verdict) string {
	s := string(c.Verdict)
	if c.Code != "" {
		s += " [" + c.Code + "]"
	}
	switch {
	case c.Judgement != "":
		s += ": " + c.Judgement
	case c.Error != "":
		s += ": " + c.Error
	}
	return s
}

// earlierAttempts says what became of the attempts of s that do not count
// against its retries (Reassigned): given up for another, as its code
// says, or made under an earlier plan revision (a replan carries a step's
// attempts over, and its code is then empty).
func earlierAttempts(revision int, s api.Step) string {
	n := fmt.Sprintf("%d attempt%s", s.Reassigned, plural(s.Reassigned))
	switch core.Code(s.Code) {
	case core.CodeNodeLost:
		return n + " given up for another (its node failed or left)"
	case core.CodeNotStarted:
		return n + " given up for another (its executor did not start it in time)"
	case core.CodeNodeDraining:
		return n + " given up for another (its node drains)"
	}
	switch {
	case revision > 1 && s.Code == "":
		return n + " under an earlier plan revision (they do not count against its retries)"
	case revision > 1:
		return n + " not counted against its retries (made under an earlier plan revision, or given up for another: node lost, drained or not started)"
	}
	return n + " given up for another (node lost, drained or not started)"
}
