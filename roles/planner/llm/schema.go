package llm

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// planSchema is the JSON schema of the plan file format (flat or
// hierarchical) a model is asked to answer in.
//
//go:embed plan.schema.json
var planSchema []byte

// Schema returns the JSON schema a model's plan must satisfy.
func Schema() json.RawMessage { return append(json.RawMessage(nil), planSchema...) }

// compiled is planSchema, compiled once.
var compiled = func() *jsonschema.Schema {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(planSchema))
	if err != nil {
		panic(fmt.Sprintf("llm: plan schema: %v", err))
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("plan.schema.json", doc); err != nil {
		panic(fmt.Sprintf("llm: plan schema: %v", err))
	}
	s, err := c.Compile("plan.schema.json")
	if err != nil {
		panic(fmt.Sprintf("llm: plan schema: %v", err))
	}
	return s
}()

// CheckSchema reports how doc (one JSON value) breaks the plan schema, one
// problem per line, or nil.
func CheckSchema(doc []byte) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	err = compiled.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return err
	}
	var lines []string
	collect(ve, &lines)
	if len(lines) == 0 {
		return errors.New(strings.TrimSpace(ve.Error()))
	}
	return errors.New(strings.Join(lines, "\n"))
}

// collect gathers the leaves of a validation error: the concrete
// problems, each with the place in the document it is about.
func collect(ve *jsonschema.ValidationError, out *[]string) {
	if len(ve.Causes) == 0 {
		loc := "/" + strings.Join(ve.InstanceLocation, "/")
		// The kind is a struct: its words are what the leaf's Error says
		// after "at '<loc>': " (formatting the kind itself prints the Go
		// struct, "&{number [string]}").
		msg := ve.Error()
		if i := strings.Index(msg, "': "); strings.HasPrefix(msg, "at '") && i >= 0 {
			msg = msg[i+len("': "):]
		}
		*out = append(*out, fmt.Sprintf("%s: %s", loc, msg))
		return
	}
	for _, c := range ve.Causes {
		collect(c, out)
	}
}
