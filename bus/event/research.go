package event

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Research steps (protocol version 8): a plan asks questions, names the
// sources that answer them, and a model writes cited notes.
//
//   - A research step (KindResearch) is run by an executor: it fetches
//     each of Step.Sources, judged by the policy's scopes.network, and
//     stores each as an object named by its content hash; its output is
//     the list of sources it fetched (ResearchSource, one JSON object a
//     line).
//   - A synthesise step (KindSynthesise) targets a research step it
//     depends on and is judged like a critique: the leader asks the
//     planners (critique.requested, Kind synthesise), one claims it,
//     reads the fetched sources and asks its model for notes; it records
//     each note (KbNoted) and then the step's verdict (critique.recorded).
//   - The memory fold keeps the notes beside the facts: searchable,
//     citable from later prompts, quarantined by the same rules.
const (
	// KindResearch fetches the step's Sources (protocol version 8).
	KindResearch StepKind = "research"
	// KindSynthesise turns the sources its Target (a research step)
	// fetched into notes (protocol version 8).
	KindSynthesise StepKind = "synthesise"
)

// KbNoted is a note a planner's model synthesised from a research step's
// sources (KbNotedData), signed by that planner. Protocol version 8.
const KbNoted Type = "kb.noted"

// NotesRefPrefix starts a Step.Releases entry that names the notes of a
// synthesise step of the same run ("kb/notes"): the validation step
// that tests their claims releases those that are quarantined when it
// succeeds, under the rules of releases (an operator's plan, or an
// approval) — the "test step" that stands in for a second source.
const NotesRefPrefix = "kb/"

// Bounds of research steps and notes.
const (
	// MaxResearchSources bounds a research step's Sources.
	MaxResearchSources = 32
	// MaxResearchQuestions bounds a research step's Questions.
	MaxResearchQuestions = 32
	// MaxSourceBytes bounds one fetched source: a longer body fails
	// its fetch (64 MiB).
	MaxSourceBytes = 64 << 20
	// MaxNoteClaim bounds a note's claim, and MaxQuote a citation's
	// quote, in bytes.
	MaxNoteClaim = 4 << 10
	MaxQuote     = 1 << 10
	// MaxCitations bounds a note's citations.
	MaxCitations = 16
)

// ResearchQuestion is one question of a research step (Step.Questions).
// Protocol version 8.
type ResearchQuestion struct {
	// Q is the question.
	Q string `json:"q"`
	// Criteria say what an acceptable answer shows.
	Criteria string `json:"criteria,omitempty"`
	// Critical marks a question whose claims need two independent
	// sources (distinct hosts and distinct content hashes) or a test
	// step, else they stay quarantined. Set by the plan's author: a
	// model may raise it, never lower it.
	Critical bool `json:"critical,omitempty"`
}

// ResearchSource is one source a research step fetched: a line of its
// output, and what a synthesis reads. Protocol version 8.
type ResearchSource struct {
	// Index is the source's position in Step.Sources.
	Index int `json:"index"`
	// URL is the source as the plan named it; Final the URL its body
	// came from (after redirects, each judged again).
	URL   string `json:"url"`
	Final string `json:"final,omitempty"`
	// Host is Final's host name (lower case, no port): independence of
	// sources is judged by it.
	Host string `json:"host"`
	// SHA256 is the hex sha256 of the body, the name of its object.
	SHA256 string `json:"sha256"`
	// Size is the body's length in bytes.
	Size int64 `json:"size"`
	// ContentType is the Content-Type the server gave.
	ContentType string `json:"content_type,omitempty"`
	// Fetched is when the body was fetched (RFC 3339, UTC).
	Fetched string `json:"fetched"`
	// Object is the body's name in the store of sources.
	Object string `json:"object"`
}

// Citation is one source a note cites: the content hash of a fetched
// source and a quote that occurs in it. Protocol version 8.
type Citation struct {
	// SHA256 names the source (ResearchSource.SHA256).
	SHA256 string `json:"sha256"`
	// Quote occurs in the source's text, as the planner checked.
	Quote string `json:"quote"`
	// URL and Host are the source's, for people and for independence.
	URL  string `json:"url,omitempty"`
	Host string `json:"host,omitempty"`
}

// KbNotedData is a note: a claim a model drew from a research step's
// sources, with the citations the planner checked. Protocol version 8.
type KbNotedData struct {
	// ID names the note (unique in the cluster): "<run>/<step>/<n>".
	ID string `json:"id"`
	// Step and Attempt are the synthesise step that wrote it; Research
	// the research step whose sources it read.
	Step     string `json:"step"`
	Attempt  int    `json:"attempt"`
	Research string `json:"research,omitempty"`
	// Question is the question it answers (ResearchQuestion.Q), Critical
	// whether its claims need two independent sources.
	Question string `json:"question,omitempty"`
	Critical bool   `json:"critical,omitempty"`
	// Claim is what the note says.
	Claim string `json:"claim"`
	// Confidence is the model's, from 0 to 1.
	Confidence float64 `json:"confidence"`
	// Citations are the sources whose quotes were found in them; Dropped
	// counts the ones refused (a quote not in the source, an unknown
	// hash).
	Citations []Citation `json:"citations"`
	Dropped   int        `json:"dropped,omitempty"`
	// Family is the run's plan family, if any.
	Family string `json:"family,omitempty"`
	// Source is the model's name, as plan provenance names it.
	Source string `json:"source,omitempty"`
}

// Independent reports whether the citations come from two independent
// sources: distinct hosts and distinct content hashes.
func (d KbNotedData) Independent() bool {
	for i, a := range d.Citations {
		for _, b := range d.Citations[i+1:] {
			if a.Host != "" && b.Host != "" && !strings.EqualFold(a.Host, b.Host) && a.SHA256 != b.SHA256 {
				return true
			}
		}
	}
	return false
}

// CheckResearch reports every problem of a research step's questions and
// sources at once: no source or question, too many, a question without
// text, a source that is not an absolute http or https URL.
func CheckResearch(s Step) error {
	var probs []string
	if len(s.Sources) == 0 {
		probs = append(probs, "a research step needs sources")
	}
	if len(s.Sources) > MaxResearchSources {
		probs = append(probs, fmt.Sprintf("%d sources: at most %d", len(s.Sources), MaxResearchSources))
	}
	if len(s.Questions) == 0 {
		probs = append(probs, "a research step needs questions")
	}
	if len(s.Questions) > MaxResearchQuestions {
		probs = append(probs, fmt.Sprintf("%d questions: at most %d", len(s.Questions), MaxResearchQuestions))
	}
	for i, q := range s.Questions {
		if strings.TrimSpace(q.Q) == "" {
			probs = append(probs, fmt.Sprintf("question %d has no q", i))
		}
	}
	for i, src := range s.Sources {
		if _, err := SourceHostPort(src); err != nil {
			probs = append(probs, fmt.Sprintf("source %d: %v", i, err))
		}
	}
	if len(probs) > 0 {
		return fmt.Errorf("research step %q: %s", s.ID, strings.Join(probs, "; "))
	}
	return nil
}

// SourceHostPort is the "host:port" of an http or https URL that
// scopes.network judges, the port filled in from the scheme.
func SourceHostPort(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("%q is not a URL: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%q is not an http or https URL", raw)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%q names no host", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("%q carries credentials in the URL", raw)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	return net.JoinHostPort(strings.ToLower(u.Hostname()), port), nil
}
