package policy

import (
	"fmt"
	"strings"

	"github.com/agentic-dev/agentic/bus/event"
)

// RuleNetwork: a research step's source is a host the policy's
// scopes.network does not allow (NetworkAllowed).
const RuleNetwork = "network"

// judgeResearch is the verdict on a research step (event.KindResearch):
// deny, rule network, when a source is not an http(s) URL or its host is
// not in scopes.network — the reason names the step, the source's index,
// the host and why; a synthesise step runs nothing and is allowed. The
// executor judges each source again before it fetches it, and each
// redirect before it follows it.
func (p *Policy) judgeResearch(s event.Step) Verdict {
	if s.Kind == event.KindSynthesise {
		v := p.allowed(string(s.Kind))
		v.Why = "a synthesise step runs nothing: a model writes notes from the sources its research step fetched"
		return v
	}
	var hosts []string
	for i, src := range s.Sources {
		hp, err := event.SourceHostPort(src)
		why := ""
		switch {
		case err != nil:
			why = err.Error()
		default:
			if ok, reason := p.NetworkAllowed(hp); !ok {
				why = reason
			}
		}
		if why != "" {
			return Verdict{Command: "fetch " + src, Action: Deny, Level: High, Rule: RuleNetwork, Policy: p.Ref(), Reversible: true,
				Why:      fmt.Sprintf("research step %s, source %d (%s): %s", s.ID, i, src, why),
				Findings: []Finding{}, Highlights: []Highlight{}}
		}
		hosts = append(hosts, hp)
	}
	v := p.allowed("fetch " + strings.Join(s.Sources, " "))
	v.Rule = RuleNetwork
	v.Why = "every source is in scopes.network: " + strings.Join(hosts, ", ")
	return v
}
