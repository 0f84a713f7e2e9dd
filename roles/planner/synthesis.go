package planner

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/envelope"
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/bus/redact"
	"github.com/agentic-dev/agentic/roles/research"
)

// SynthesisSource writes research notes (roles/planner/llm): it reads
// the sources a research step fetched and answers its questions with
// claims that cite them. A planner whose text source is one, and that
// has a store of sources (Config.Sources), synthesises.
type SynthesisSource interface {
	Synthesise(ctx context.Context, run string, req event.CritiqueRequestedData, srcs []research.SourceText) ([]research.Note, *event.PlannerInfo, error)
}

// Synthesis. A synthesise step is asked for as a critique
// (critique.requested with Kind synthesise), claimed and answered the
// same way; its answer is the notes, each a kb.noted this planner signs,
// then the step's verdict:
//
//  1. each source is read back from the store, verified against its
//     sha256 (a tampered source fails the step), and turned into text;
//  2. the model gets the questions and bounded excerpts of the texts,
//     fenced as data, and answers notes (schema-checked, sent back once
//     when they are not);
//  3. each citation is kept only when its source is one of the step's
//     and its quote occurs in that source's text (research.Contains):
//     the others are dropped and counted; a note left with none is not
//     recorded;
//  4. a note is critical when its question is (the plan's author's
//     word) or the model says so: a model raises it, never lowers it;
//  5. verdict pass when at least one note was recorded, fail (class
//     logic) when none was, error when the model or the store failed.

// draftSynthesis writes the notes of synthesise job j and returns its
// verdict.
func (p *Planner) draftSynthesis(ctx context.Context, j job, rec event.CritiqueRecordedData) event.Draft {
	req := *j.critique
	src, ok := p.cfg.Text.(SynthesisSource)
	if !ok || p.cfg.Sources == nil {
		rec.Error = "planner: this planner cannot synthesise notes: it needs a model and the store of fetched sources"
		return event.MustDraft(event.CritiqueRecorded, j.id, rec)
	}
	fail := func(why string) event.Draft {
		rec.Verdict, rec.Judgement = event.VerdictFail, why
		return event.MustDraft(event.CritiqueRecorded, j.id, rec)
	}
	if len(req.Sources) == 0 {
		return fail(fmt.Sprintf("research step %s fetched no source to synthesise", req.Target))
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.Timeout)
	defer cancel()
	texts := make([]research.SourceText, 0, len(req.Sources))
	for _, s := range req.Sources {
		text, err := research.Read(cctx, p.cfg.Sources, s, 0)
		switch {
		case errors.Is(err, research.ErrTampered):
			return fail(fmt.Sprintf("source %d of research step %s (%s): %v", s.Index, req.Target, s.URL, err))
		case err != nil:
			rec.Error = fmt.Sprintf("planner: read source %d of research step %s (%s): %v", s.Index, req.Target, s.URL, err)
			return event.MustDraft(event.CritiqueRecorded, j.id, rec)
		}
		texts = append(texts, research.SourceText{Source: s, Text: text})
	}
	notes, info, err := src.Synthesise(cctx, j.id, req, texts)
	rec.Planner = info
	if err != nil {
		rec.Error = err.Error()
		if len(rec.Error) > maxRejection {
			rec.Error = rec.Error[:maxRejection] + "\n... (truncated)"
		}
		return event.MustDraft(event.CritiqueRecorded, j.id, rec)
	}
	recorded, dropped, refused := 0, 0, 0
	for i, n := range notes {
		d, drops := checkNote(j.id, req, texts, i+1, n)
		dropped += drops
		if len(d.Citations) == 0 {
			refused++
			continue
		}
		d.Source = p.cfg.Text.Name()
		ev := event.MustDraft(event.KbNoted, j.id, d)
		ectx, ecancel := context.WithTimeout(ctx, p.cfg.Timeout)
		err := p.env.Emit.Emit(ectx, ev)
		ecancel()
		if err != nil {
			rec.Error = fmt.Sprintf("planner: record note %s: %v", d.ID, err)
			return event.MustDraft(event.CritiqueRecorded, j.id, rec)
		}
		p.log.Info("note recorded", "run", j.id, "step", req.Step, "note", d.ID, "critical", d.Critical, "citations", len(d.Citations), "dropped", drops)
		recorded++
	}
	summary := fmt.Sprintf("%d notes recorded from %d sources; %d citations dropped (quote not in its source, or an unknown source); %d notes refused (no valid citation)",
		recorded, len(texts), dropped, refused)
	if recorded == 0 {
		return fail("no note has a citation whose quote occurs in its source: " + summary)
	}
	rec.Verdict, rec.Judgement = event.VerdictPass, summary
	d := event.MustDraft(event.CritiqueRecorded, j.id, rec)
	if len(d.Data) > envelope.MaxEventBytes && rec.Planner != nil {
		// The answers are what made it too large: keep the verdict.
		info := *rec.Planner
		info.Responses = nil
		rec.Planner = &info
		d = event.MustDraft(event.CritiqueRecorded, j.id, rec)
	}
	return d
}

// checkNote turns the model's note n (the k-th) into the kb.noted it
// stands for: its citations checked against the sources' texts, its
// claim and quotes bounded and redacted, critical raised by the model
// never lowered. It returns the note and how many citations it dropped.
func checkNote(run string, req event.CritiqueRequestedData, texts []research.SourceText, k int, n research.Note) (event.KbNotedData, int) {
	d := event.KbNotedData{ID: fmt.Sprintf("%s/%s/%d", run, req.Step, k), Step: req.Step, Attempt: req.Attempt, Research: req.Target,
		Claim: redact.Redact(cut(strings.TrimSpace(n.Claim), event.MaxNoteClaim)), Confidence: min(max(n.Confidence, 0), 1)}
	if n.Question >= 0 && n.Question < len(req.Questions) {
		q := req.Questions[n.Question]
		d.Question, d.Critical = q.Q, q.Critical
	}
	d.Critical = d.Critical || n.Critical
	dropped := 0
	seen := map[string]bool{}
	for _, c := range n.Citations {
		src, ok := citedSource(texts, c)
		quote := research.Normalize(c.Quote) // stored and compared as found
		if !ok || len(quote) > event.MaxQuote || !research.Contains(src.Text, quote) || len(d.Citations) == event.MaxCitations {
			dropped++
			continue
		}
		if key := src.Source.SHA256 + "\x00" + quote; !seen[key] {
			seen[key] = true
			d.Citations = append(d.Citations, event.Citation{SHA256: src.Source.SHA256, Quote: redact.Redact(quote),
				URL: src.Source.URL, Host: src.Source.Host})
		}
	}
	return d, dropped
}

// citedSource is the source a citation names: by its sha256 when it
// gives one, else by its number in the prompt.
func citedSource(texts []research.SourceText, c research.NoteCite) (research.SourceText, bool) {
	if c.SHA256 != "" {
		for _, t := range texts {
			if strings.EqualFold(t.Source.SHA256, c.SHA256) {
				return t, true
			}
		}
		return research.SourceText{}, false
	}
	if c.Source >= 0 && c.Source < len(texts) {
		return texts[c.Source], true
	}
	return research.SourceText{}, false
}

// cut is s cut to at most n bytes at a character's start.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
