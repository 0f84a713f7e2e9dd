package llm

import (
	"encoding/json"
	"errors"
	"strings"
)

// ErrNoJSON: the answer holds no JSON object.
var ErrNoJSON = errors.New("the answer holds no JSON object")

// Extract returns the JSON object of a model's answer: the answer itself
// when it is one, else the first fenced block (```json … ``` or ``` … ```)
// that is one, else the first balanced {…} in the text that parses. Models
// served without response-format support wrap plans in fences and chatter.
func Extract(answer string) ([]byte, error) {
	s := strings.TrimSpace(answer)
	if isObject(s) {
		return []byte(s), nil
	}
	for rest := s; ; {
		i := strings.Index(rest, "```")
		if i < 0 {
			break
		}
		body := rest[i+3:]
		// Skip the info string (json, JSON, yaml…) up to the line's end.
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			body = body[nl+1:]
		}
		j := strings.Index(body, "```")
		if j < 0 {
			break
		}
		if block := strings.TrimSpace(body[:j]); isObject(block) {
			return []byte(block), nil
		}
		rest = body[j+3:]
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		if end := balanced(s[i:]); end > 0 && isObject(s[i:i+end]) {
			return []byte(s[i : i+end]), nil
		}
	}
	return nil, ErrNoJSON
}

// isObject reports whether s is exactly one JSON object.
func isObject(s string) bool {
	if !strings.HasPrefix(s, "{") {
		return false
	}
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil
}

// balanced returns the length of the {…} that starts s, braces inside
// strings ignored, or 0 if it does not close.
func balanced(s string) int {
	depth, inString, escaped := 0, false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case inString:
		case c == '{':
			depth++
		case c == '}':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
	}
	return 0
}
