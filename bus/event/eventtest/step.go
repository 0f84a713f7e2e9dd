// Package eventtest is a test kit for the protocol's step schema: the one
// declaration of a plan step is event.Step, and every other place that
// lists its fields (the plan file decoder, agentctl's plan writer, the
// orchestrator's step view) is held to it by a test built on this kit.
//
// A field added to event.Step fails those tests until each place knows
// it; their messages name the file to change.
package eventtest

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// StepDecl names where the step schema is declared, for failure messages.
const StepDecl = "bus/event/plan.go (event.Step)"

// JSONFields lists the JSON names of the fields of struct type t, in
// declaration order (fields without a name or with "-" left out).
func JSONFields(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// StepFields lists the JSON names of event.Step's fields, in declaration
// order.
func StepFields() []string { return JSONFields(reflect.TypeFor[event.Step]()) }

// FullStep returns a step whose every field, and every field of what it
// holds (branches, hypothesis tests), is set to a value that is not its
// zero value: a string field holds its JSON name, a number 1, a flag true,
// a duration one second, a list one element, a map one entry. The step is
// not valid (no kind takes every field); it is for checking that a
// writer or a copy leaves no field out.
func FullStep() event.Step {
	var s event.Step
	fill(reflect.ValueOf(&s).Elem(), "step")
	return s
}

// fill sets v, named name, to a value that is not zero.
func fill(v reflect.Value, name string) {
	if v.Type() == reflect.TypeFor[event.Duration]() {
		v.Set(reflect.ValueOf(event.Duration(time.Second)))
		return
	}
	if v.Type() == reflect.TypeFor[json.RawMessage]() {
		v.Set(reflect.ValueOf(json.RawMessage(`{"` + name + `":1}`)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0), name)
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, name+"_key")
		fill(e, name)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), name)
		v.Set(p)
	case reflect.Struct:
		t := v.Type()
		names := JSONFields(t)
		i := 0
		for f := range t.Fields() {
			if !f.IsExported() {
				continue
			}
			if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); n == "-" {
				continue
			}
			fill(v.FieldByIndex(f.Index), names[i])
			i++
		}
	default:
		panic("eventtest: cannot fill a " + v.Type().String() + " (" + name + "): teach fill its kind")
	}
}
