package llm

import (
	"strings"
	"testing"
)

// TestCheckSchemaErrorsAreWords: a schema problem reads as words with its
// place in the document, never as a Go struct ("&{number [string]}").
func TestCheckSchemaErrorsAreWords(t *testing.T) {
	err := CheckSchema([]byte(`{"steps": [{"id": 5, "run": "true"}]}`))
	if err == nil {
		t.Fatal("a numeric step id passed the schema")
	}
	if msg := err.Error(); strings.Contains(msg, "&{") || !strings.Contains(msg, "/steps/0/id: ") || !strings.Contains(msg, "got number, want string") {
		t.Errorf("CheckSchema error = %q", msg)
	}
}
