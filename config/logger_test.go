package config

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		format, level string
		wantJSON      bool
		debugShown    bool
	}{
		{"auto", "info", true, false}, // a buffer is not a terminal
		{"json", "debug", true, true},
		{"text", "warn", false, false},
	}
	for _, tt := range tests {
		c := Default()
		c.Log = LogConfig{Level: tt.level, Format: tt.format}
		var buf bytes.Buffer
		l := c.NewLogger(&buf)
		l.Debug("dbg")
		l.Error("boom", "k", 1)
		out := strings.TrimSpace(buf.String())
		lines := strings.Split(out, "\n")
		if got := len(lines) == 2; got != tt.debugShown {
			t.Errorf("%s/%s: debug shown = %v, output %q", tt.format, tt.level, got, out)
		}
		last := lines[len(lines)-1]
		if isJSON := json.Valid([]byte(last)); isJSON != tt.wantJSON {
			t.Errorf("%s/%s: json = %v, line %q", tt.format, tt.level, isJSON, last)
		}
	}
	c := Default()
	c.Log.Level = "error"
	if c.SlogLevel() != slog.LevelError {
		t.Errorf("SlogLevel = %v", c.SlogLevel())
	}
}
