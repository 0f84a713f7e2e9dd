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
	if !encodingOK(ps, data) || !syntaxOK(ps, name, data) {
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

// Byte-order marks of the encodings a plan file must not be in. UTF-32's
// come first: UTF-32LE's starts with UTF-16LE's.
var boms = []struct {
	bom  string
	name string
}{
	{"\xff\xfe\x00\x00", "UTF-32 (little-endian)"},
	{"\x00\x00\xfe\xff", "UTF-32 (big-endian)"},
	{"\xff\xfe", "UTF-16 (little-endian)"},
	{"\xfe\xff", "UTF-16 (big-endian)"},
}

// encodingOK reports a plan file that is not UTF-8 text: a UTF-16 or
// UTF-32 byte-order mark, NUL bytes (UTF-16 or UTF-32 without a mark, or
// a binary file) or invalid UTF-8. Parsed as YAML such a file gives
// nonsense ("unknown field teps"), so the encoding is named instead.
func encodingOK(ps *problems, data []byte) bool {
	for _, b := range boms {
		if bytes.HasPrefix(data, []byte(b.bom)) {
			ps.add(pos{line: 1, col: 1}, "plan file is %s; save it as UTF-8", b.name)
			return false
		}
	}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line, col := lineCol(data, i)
		what := "a binary file?"
		if utf16ish(data) {
			what = "UTF-16 or UTF-32 without a byte-order mark?"
		}
		ps.add(pos{line: line, col: col}, "plan file holds NUL bytes: it is not UTF-8 text (%s); save it as UTF-8", what)
		return false
	}
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, size := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		line, col := lineCol(data, i)
		ps.add(pos{line: line, col: col}, "plan file is not valid UTF-8 (byte 0x%02x at offset %d); save it as UTF-8", data[i], i)
		return false
	}
	return true
}

// utf16ish reports whether the first bytes of data look like ASCII text
// in a 16- or 32-bit encoding: every other byte (or more) is NUL.
func utf16ish(data []byte) bool {
	n := min(len(data), 64)
	nul := bytes.Count(data[:n], []byte{0})
	return n >= 2 && nul*2 >= n-1
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
