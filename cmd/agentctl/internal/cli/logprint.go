package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
)

// Output streams of a step, as the executor names them in Agentic-Stream.
const (
	streamStdout = "stdout"
	streamStderr = "stderr"
)

// maxLogLine bounds a buffered partial line: a longer line is printed in
// pieces of this size rather than held in memory.
const maxLogLine = 64 << 10

// logLine is one line of step output: what run logs prints per line with
// -o jsonl, and the elements of the -o json array.
type logLine struct {
	Run     string `json:"run"`
	Step    string `json:"step"`
	Attempt int    `json:"attempt"`
	Stream  string `json:"stream"`
	Line    string `json:"line"`
	// Cut marks the line that says the output before it is gone: the
	// logs stream's limits dropped it (Line says so; not output).
	Cut bool `json:"cut,omitempty"`
}

// logKey names one output stream of one attempt: lines are reassembled per
// key, as chunks of different steps and streams interleave.
type logKey struct {
	step    string
	attempt int
	stream  string
}

// logPrinter turns chunks, which are not line-aligned, into whole lines and
// prints them as text (with a step prefix when several steps show), jsonl,
// or collects them for one json array.
type logPrinter struct {
	a       *app
	run     string
	prefix  bool // text: "step | " before each line
	width   int  // text: the step column, grown by the longest step id
	partial map[logKey][]byte
	order   []logKey       // keys in first-seen order, for the final flush
	shown   map[string]int // text: the attempt last printed per step
	all     []logLine      // json: the array to print at the end
	lines   int
	// cut, if set, says for an output stream seen for the first time
	// whether the logs stream may have dropped its start, and how to say
	// so ("" when not).
	cut func(k logKey) string
}

func newLogPrinter(a *app, run string, prefix bool, steps []string) *logPrinter {
	p := &logPrinter{a: a, run: run, prefix: prefix, partial: map[logKey][]byte{}, shown: map[string]int{}}
	for _, s := range steps {
		p.width = max(p.width, len(s))
	}
	return p
}

// chunk adds output and prints every line it completes.
func (p *logPrinter) chunk(k logKey, data []byte) error {
	buf, seen := p.partial[k]
	if !seen {
		p.order = append(p.order, k)
		if p.cut != nil {
			if note := p.cut(k); note != "" {
				if err := p.cutLine(k, note); err != nil {
					return err
				}
			}
		}
	}
	buf = append(buf, data...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 && len(buf) < maxLogLine {
			break
		}
		end, next := i, i+1
		if i < 0 || i > maxLogLine {
			end, next = maxLogLine, maxLogLine
		}
		if err := p.line(k, buf[:end]); err != nil {
			return err
		}
		buf = buf[next:]
	}
	p.partial[k] = append([]byte(nil), buf...)
	return nil
}

// flush prints the partial lines still buffered, oldest key first.
func (p *logPrinter) flush() error {
	for _, k := range p.order {
		if buf := p.partial[k]; len(buf) > 0 {
			p.partial[k] = nil
			if err := p.line(k, buf); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish flushes and, for -o json, prints the array.
func (p *logPrinter) finish() error {
	if err := p.flush(); err != nil {
		return err
	}
	if p.a.output == formatJSON {
		return writeList(p.a, p.all)
	}
	return nil
}

func (p *logPrinter) line(k logKey, b []byte) error {
	p.lines++
	l := logLine{Run: p.run, Step: k.step, Attempt: k.attempt, Stream: k.stream, Line: string(bytes.TrimSuffix(b, []byte("\r")))}
	switch p.a.output {
	case formatJSON:
		p.all = append(p.all, l)
		return nil
	case formatJSONL:
		return p.a.writeLine(l)
	}
	if last, ok := p.shown[k.step]; ok && last != k.attempt {
		if err := p.text(k.step, fmt.Sprintf("--- attempt %d ---", k.attempt)); err != nil {
			return err
		}
	}
	p.shown[k.step] = k.attempt
	return p.text(k.step, l.Line)
}

// cutLine says, where an output stream's kept chunks begin, that what
// came before is gone: a text line in brackets, or a json line with cut
// set.
func (p *logPrinter) cutLine(k logKey, note string) error {
	l := logLine{Run: p.run, Step: k.step, Attempt: k.attempt, Stream: k.stream, Line: note, Cut: true}
	switch p.a.output {
	case formatJSON:
		p.all = append(p.all, l)
		return nil
	case formatJSONL:
		return p.a.writeLine(l)
	}
	p.shown[k.step] = k.attempt
	return p.text(k.step, "["+note+"]")
}

// text prints one line of text output, behind the step column if any.
func (p *logPrinter) text(step, line string) error {
	if !p.prefix {
		_, err := fmt.Fprintln(p.a.env.Stdout, line)
		return err
	}
	p.width = max(p.width, len(step))
	_, err := fmt.Fprintf(p.a.env.Stdout, "%-*s | %s\n", p.width, step, line)
	return err
}

// note prints an aside for people on stderr: dim on a terminal.
func (a *app) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if isTerminal(a.env.Stderr) && a.env.Getenv("NO_COLOR") == "" {
		_ = writeStyled(a.env.Stderr, "\x1b[2m"+escapeText(msg)+"\x1b[0m\n")
		return
	}
	fmt.Fprintln(a.env.Stderr, msg)
}

func isTerminal(w io.Writer) bool {
	if t, ok := w.(*termWriter); ok {
		w = t.w
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// describeFilter is " (attempt 2, stderr)" for the filters in use.
func describeFilter(o logsOpts) string {
	var parts []string
	if o.attempt > 0 {
		parts = append(parts, fmt.Sprintf("attempt %d", o.attempt))
	}
	if o.stream != "" {
		parts = append(parts, o.stream)
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
