package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// renderCandidates prints, in one line, the scores of the plans a model
// was asked for when there were several (planner.candidates): lowest
// wins, the chosen one marked.
func renderCandidates(w io.Writer, p *event.PlannerInfo) {
	if len(p.Candidates) == 0 {
		return
	}
	parts := make([]string, 0, len(p.Candidates))
	for i, c := range p.Candidates {
		var s string
		switch {
		case c.Error != "":
			s = fmt.Sprintf("#%d invalid", i+1)
		default:
			s = fmt.Sprintf("#%d %s (risk %d, %d steps, history %s", i+1,
				strconv.FormatFloat(c.Score, 'g', -1, 64), c.Risk, c.Steps, strconv.FormatFloat(c.History, 'g', -1, 64))
			if c.Denied > 0 {
				s += fmt.Sprintf(", %d denied", c.Denied)
			}
			s += ")"
		}
		if c.Chosen {
			s += " chosen"
		}
		parts = append(parts, s)
	}
	fmt.Fprintf(w, "candidates: %s\n", strings.Join(parts, "; "))
}
