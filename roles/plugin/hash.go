package plugin

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/internal/canonjson"
)

// HashPrefix starts every hash this package gives.
const HashPrefix = "sha256:"

// DefinitionHash is the hash of a tool definition: sha256 over the
// canonical JSON (canonjson.Sorted) of its name, title, description,
// input and output schemas and annotations. Schemas and annotations that
// are not JSON are an error (a server that reports them is refused).
func DefinitionHash(d event.ToolDefinition) (string, error) {
	var parts [3]json.RawMessage
	for i, raw := range []json.RawMessage{d.InputSchema, d.OutputSchema, d.Annotations} {
		c, err := canonjson.Sorted(raw)
		if err != nil {
			return "", fmt.Errorf("plugin: tool %q: %w", d.Name, err)
		}
		parts[i] = c
	}
	doc := struct {
		Name         string          `json:"name"`
		Title        string          `json:"title"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		OutputSchema json.RawMessage `json:"output_schema"`
		Annotations  json.RawMessage `json:"annotations"`
	}{d.Name, d.Title, d.Description, parts[0], parts[1], parts[2]}
	b, err := json.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("plugin: tool %q: %w", d.Name, err)
	}
	return hashBytes(b), nil
}

// ManifestHash is the hash of a manifest: sha256 over its JSON (the
// event's form; the struct's fields are in a fixed order).
func ManifestHash(m event.PluginManifest) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("plugin: marshal manifest: %v", err)) // plain fields: cannot fail
	}
	return hashBytes(b)
}

func hashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return HashPrefix + hex.EncodeToString(sum[:])
}
