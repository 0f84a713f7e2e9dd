package logging

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// uniqueKeys checks that no JSON object in line has a key twice, at any
// depth, and returns the decoded line.
func uniqueKeys(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	var walk func() error
	walk = func() error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				if seen[k.(string)] {
					return fmt.Errorf("key %q twice", k)
				}
				seen[k.(string)] = true
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for dec.More() {
				if err := walk(); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	if err := walk(); err != nil {
		t.Fatalf("log line %s: %v", line, err)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestJSONKeysUnique: a JSON log line never repeats a key. A logger given
// "component" twice (a library's logger made from the node's) keeps the
// innermost; an attribute named like a built-in key ("msg", as the NATS
// and Pebble adapters log their text) is renamed, its value kept.
func TestJSONKeysUnique(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(NewHandler(&b, "json", &slog.HandlerOptions{Level: slog.LevelDebug}))
	log.With("component", "node").With("component", "bus", "node", "n1").Info("nats", "msg", "server ready", "component", "nats", "level", "x")
	log.With("component", "api").WithGroup("req").With("id", 1).Info("served", "id", 2, "method", "runs.get")
	log.Warn("plain", "a", 1, "a", 2, "msg", "m", "detail", "d")

	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	m := uniqueKeys(t, lines[0])
	if m["msg"] != "nats" || m["detail"] != "server ready" || m["component"] != "nats" || m["node"] != "n1" || m["level"] != "INFO" || m["attr_level"] != "x" {
		t.Errorf("line 1 = %v", m)
	}
	m = uniqueKeys(t, lines[1])
	req, _ := m["req"].(map[string]any)
	if m["component"] != "api" || req["id"] != 2.0 || req["method"] != "runs.get" {
		t.Errorf("line 2 = %v", m)
	}
	if m = uniqueKeys(t, lines[2]); m["a"] != 2.0 || m["detail"] != "d" {
		t.Errorf("line 3 = %v", m)
	}
}

// TestTextFormat: the text format keeps one key each too.
func TestTextFormat(t *testing.T) {
	var b bytes.Buffer
	slog.New(NewHandler(&b, "text", nil)).With("component", "a").Info("hi", "component", "b", "msg", "m")
	if got := b.String(); strings.Count(got, "component=") != 1 || strings.Count(got, "msg=") != 1 || !strings.Contains(got, "detail=m") {
		t.Errorf("text line = %q", got)
	}
}
