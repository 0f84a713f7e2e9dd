package plan

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
	"gopkg.in/yaml.v3"
)

// Parse reads a plan file in any of the accepted formats (flat,
// hierarchical or seed; YAML or JSON), checks it and returns the
// normalized plan, in the protocol's form (event.Plan). name is the file name, used in messages and to pick the
// syntax: ".json" is JSON, ".yaml"/".yml" is YAML, anything else is JSON
// when it parses as JSON and YAML otherwise.
//
// A plan with problems gives an *Error listing all of them (up to
// MaxProblems) with file, line and column; it wraps ErrInvalid.
func Parse(name string, data []byte) (*event.Plan, error) {
	ps := &problems{file: name}
	if len(data) > MaxFileBytes {
		ps.add(pos{}, "file is %d bytes; the limit is %d", len(data), MaxFileBytes)
		return nil, ps.err()
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !syntaxOK(ps, name, data) {
		return nil, ps.err()
	}
	root, ok := parseYAML(ps, data)
	if !ok {
		return nil, ps.err()
	}
	w := &walker{ps: ps}
	p := compile(w.decode(root), ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	return p, nil
}

// syntaxOK checks JSON syntax first where the input is meant to be JSON,
// so that JSON mistakes get JSON messages rather than YAML ones.
func syntaxOK(ps *problems, name string, data []byte) bool {
	if len(bytes.TrimSpace(data)) == 0 {
		return true // YAML reports an empty file
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml":
		return true
	case ".json":
	default:
		t := bytes.TrimLeft(data, " \t\r\n")
		if len(t) == 0 || (t[0] != '{' && t[0] != '[') || json.Valid(data) {
			return true
		}
		// It looks like JSON but is not: it may be YAML flow syntax.
		if yamlParses(data) {
			return true
		}
	}
	if json.Valid(data) {
		return true
	}
	var v any
	err := json.Unmarshal(data, &v)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(data, int(se.Offset)-1)
		ps.add(pos{line: line, col: col}, "invalid JSON: %s", se.Error())
	} else {
		ps.add(pos{}, "invalid JSON: %v", err)
	}
	return false
}

// yamlParses reports whether data is one YAML document without syntax
// errors.
func yamlParses(data []byte) bool {
	_, ok := parseYAML(&problems{}, data)
	return ok
}

// lineCol converts a byte offset into a 1-based line and column (in
// characters).
func lineCol(data []byte, off int) (line, col int) {
	off = max(0, min(off, len(data)))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}

// parseYAML parses exactly one YAML document and returns its root node.
func parseYAML(ps *problems, data []byte) (root *yaml.Node, ok bool) {
	defer func() {
		// yaml.v3 has panicked on hostile input before; a parse must not.
		if r := recover(); r != nil {
			ps.add(pos{}, "invalid YAML: parser failure: %v", r)
			root, ok = nil, false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			ps.add(pos{line: 1, col: 1}, "plan file is empty")
		} else {
			addYAMLError(ps, err)
		}
		return nil, false
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case errors.Is(err, io.EOF):
	case err != nil:
		addYAMLError(ps, err)
		return nil, false
	default:
		ps.add(pos{line: extra.Line, col: extra.Column}, "more than one YAML document: a plan file holds one plan")
		return nil, false
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 {
		ps.add(pos{line: 1, col: 1}, "plan file is empty")
		return nil, false
	}
	return doc.Content[0], true
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// addYAMLError records a yaml.v3 syntax error, with its line when it has
// one.
func addYAMLError(ps *problems, err error) {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		hint := ""
		if strings.Contains(m[2], "mapping values are not allowed") {
			hint = ` (a value that contains ": " must be quoted)`
		}
		ps.add(pos{line: line}, "invalid YAML: %s%s", m[2], hint)
		return
	}
	ps.add(pos{}, "invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))
}
