package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/research"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// SynthesisVersion names the synthesis's code and prompt in provenance.
const SynthesisVersion = "llm-synthesis/1"

// ErrInvalidNotes: the model's answer, and its answer to the problems
// sent back, were not notes.
var ErrInvalidNotes = errors.New("the model did not give valid notes")

// MaxExcerpt bounds the text of one source a synthesis prompt carries,
// and MaxExcerpts all of them: the rest of a source is cut, said so in
// the prompt.
const (
	MaxExcerpt  = 24 << 10
	MaxExcerpts = 96 << 10
)

// notesSchema is the JSON schema of a synthesis's answer, asked for as
// the response format and checked on every answer.
var notesSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "notes": {
      "type": "array",
      "maxItems": 64,
      "items": {
        "type": "object",
        "properties": {
          "question": {"type": "integer", "minimum": 0},
          "claim": {"type": "string", "minLength": 1, "maxLength": 4096},
          "confidence": {"type": "number", "minimum": 0, "maximum": 1},
          "critical": {"type": "boolean"},
          "citations": {
            "type": "array",
            "minItems": 1,
            "maxItems": 16,
            "items": {
              "type": "object",
              "properties": {
                "source": {"type": "integer", "minimum": 0},
                "sha256": {"type": "string"},
                "quote": {"type": "string", "minLength": 1, "maxLength": 1024}
              },
              "required": ["quote"]
            }
          }
        },
        "required": ["question", "claim", "confidence", "citations"]
      }
    }
  },
  "required": ["notes"]
}`)

// notesCompiled is notesSchema, compiled once.
var notesCompiled = func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(notesSchema))
	if err != nil {
		panic(fmt.Sprintf("llm: notes schema: %v", err))
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("notes.schema.json", doc); err != nil {
		panic(fmt.Sprintf("llm: notes schema: %v", err))
	}
	return c.MustCompile("notes.schema.json")
}()

// synthesisSystem tells the model what a synthesis is and what to answer.
const synthesisSystem = `You write research notes for agentic, a system that runs plans on servers.
You are given questions and the text of the sources fetched to answer them, each source numbered, inside a data fence.
For each question, write the claims the sources support. Every claim cites at least one source with a quote copied EXACTLY, word for word, from that source's text (a short sentence or phrase, not paraphrased): a quote that is not in the source is thrown away, and a claim with no valid citation is not recorded.
Do not claim what no source says. Give a confidence from 0 to 1. Set "critical": true if a wrong claim could cause harm (a question marked critical stays critical whatever you say).
Answer with ONE JSON object and nothing else:
{"notes": [{"question": 0, "claim": "...", "confidence": 0.8, "critical": false, "citations": [{"source": 1, "quote": "..."}]}]}
` + dataRule

// Synthesise asks the model for notes on srcs answering req's questions
// (a synthesise step's request), and returns them with the provenance
// (Planner SynthesisVersion). An answer that is not notes (no JSON, the
// schema) is sent back once with the problems; the error of a second
// failure quotes them. The provenance is returned with errors too.
func (s *Source) Synthesise(ctx context.Context, run string, req event.CritiqueRequestedData, srcs []research.SourceText) ([]research.Note, *event.PlannerInfo, error) {
	msgs := []Message{{Role: "system", Content: synthesisSystem}, {Role: "user", Content: synthesisMessage(req, srcs)}}
	info := &event.PlannerInfo{
		Model: s.model.Name(), Planner: SynthesisVersion, PromptSHA256: promptHash(msgs),
		Temperature: s.cfg.Temperature, Seed: s.cfg.Seed, MaxTokens: s.cfg.MaxTokens,
	}
	var problem error
	for attempt := 1; attempt <= 2; attempt++ {
		start := time.Now()
		resp, err := s.model.Complete(ctx, Request{
			Messages: msgs, Schema: notesSchema, SchemaName: "agentic_notes",
			MaxTokens: s.cfg.MaxTokens, Temperature: s.cfg.Temperature, Seed: s.cfg.Seed,
		})
		info.Latency += event.Duration(time.Since(start))
		if err != nil {
			return nil, info, fmt.Errorf("run %s: synthesis %s with model %s: %w", run, req.Step, s.model.Name(), err)
		}
		info.ServedModel, info.Fingerprint = resp.Model, resp.Fingerprint
		info.PromptTokens += resp.PromptTokens
		info.CompletionTokens += resp.CompletionTokens
		info.Responses = append(info.Responses, resp.Text)
		notes, err := checkNotes(resp, len(req.Questions))
		if err == nil {
			return notes, info, nil
		}
		problem = err
		msgs = append(msgs,
			Message{Role: "assistant", Content: resp.Text},
			Message{Role: "user", Content: "That answer is not valid notes:\n" + err.Error() +
				"\nAnswer again: one JSON object {\"notes\": [...]} as described, nothing else."})
	}
	return nil, info, fmt.Errorf("run %s: synthesis %s: model %s, twice: %w: %v", run, req.Step, s.model.Name(), ErrInvalidNotes, problem)
}

// synthesisMessage lists the questions and the sources' excerpts, each
// fenced as data.
func synthesisMessage(req event.CritiqueRequestedData, srcs []research.SourceText) string {
	var b strings.Builder
	if req.Goal != "" {
		fmt.Fprintf(&b, "Goal of the run: %s\n", req.Goal)
	}
	b.WriteString("\nQuestions:\n")
	for i, q := range req.Questions {
		fmt.Fprintf(&b, "%d. %s", i, q.Q)
		if q.Criteria != "" {
			fmt.Fprintf(&b, " (an acceptable answer: %s)", q.Criteria)
		}
		if q.Critical {
			b.WriteString(" [critical]")
		}
		b.WriteByte('\n')
	}
	if req.Criteria != "" {
		fmt.Fprintf(&b, "\nWhat the notes must cover: %s\n", req.Criteria)
	}
	budget := MaxExcerpts
	for i, s := range srcs {
		text := s.Text
		limit := min(MaxExcerpt, budget)
		cut := false
		if len(text) > limit {
			n := limit
			for n > 0 && !utf8.RuneStart(text[n]) {
				n--
			}
			text, cut = text[:n], true
		}
		budget -= len(text)
		fmt.Fprintf(&b, "\nSource %d: %s (sha256 %s)\n%s\n", i, s.Source.URL, s.Source.SHA256, fenced(text))
		if cut {
			fmt.Fprintf(&b, "(source %d is cut here: %d of %d bytes shown)\n", i, len(text), len(s.Text))
		}
	}
	return b.String()
}

// checkNotes reads notes out of an answer: the JSON object (Extract, as
// for plans), checked by the notes schema; a note's question must be one
// of the n questions.
func checkNotes(resp Response, n int) ([]research.Note, error) {
	doc, err := Extract(resp.Text)
	if err != nil {
		if resp.FinishReason == "length" {
			return nil, fmt.Errorf("%w: the answer was cut at the token limit (planner.max_tokens)", err)
		}
		return nil, err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if err := notesCompiled.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			var lines []string
			collect(ve, &lines)
			if len(lines) > 0 {
				return nil, errors.New(strings.Join(lines, "\n"))
			}
		}
		return nil, err
	}
	var out struct {
		Notes []research.Note `json:"notes"`
	}
	if err := json.Unmarshal(doc, &out); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	var probs []string
	for i, note := range out.Notes {
		if note.Question >= n {
			probs = append(probs, fmt.Sprintf("/notes/%d/question: %d is not a question's number (0 to %d)", i, note.Question, n-1))
		}
	}
	if len(probs) > 0 {
		return nil, errors.New(strings.Join(probs, "\n"))
	}
	return out.Notes, nil
}
