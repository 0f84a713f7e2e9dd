package event

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// fill sets every exported field of v (settable), recursively, to a value
// that is not zero: strings to what names them, numbers to n, slices to two
// elements, maps to two entries, pointers to a filled value.
func fill(v reflect.Value, name string, depth int) {
	if depth > 6 {
		return
	}
	switch {
	case v.Type() == reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"k":["` + name + `"]}`))
		return
	case v.Type() == reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(name)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(7 + depth))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(7 + depth))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem(), name, depth+1)
		v.Set(p)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(s.Index(i), fmt.Sprintf("%s%d", name, i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for i := range 2 {
			k := reflect.New(v.Type().Key()).Elem()
			fill(k, fmt.Sprintf("%s-k%d", name, i), depth+1)
			e := reflect.New(v.Type().Elem()).Elem()
			fill(e, fmt.Sprintf("%s-v%d", name, i), depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Type().Field(i); f.IsExported() {
				fill(v.Field(i), name+"."+f.Name, depth+1)
			}
		}
	}
}

// scribble changes every string, number and bool reachable from v in
// place (through slices, maps and pointers): what a fold that changed what
// it decoded would do.
func scribble(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		if v.CanSet() {
			v.SetString("scribbled")
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if v.CanSet() {
			v.SetInt(-1)
		}
	case reflect.Bool:
		if v.CanSet() {
			v.SetBool(false)
		}
	case reflect.Uint8:
		if v.CanSet() {
			v.SetUint(0)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			scribble(v.Elem())
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			scribble(v.Index(i))
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(v.MapIndex(k))
			scribble(e)
			v.SetMapIndex(k, e)
		}
		v.SetMapIndex(reflect.ValueOf("added").Convert(v.Type().Key()), reflect.New(v.Type().Elem()).Elem())
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				scribble(v.Field(i))
			}
		}
	}
}

// filledEvent is an event whose payload is a value of t with every field
// set, and that value decoded afresh.
func filledEvent(t *testing.T, id string, typ reflect.Type) (Event, any) {
	t.Helper()
	v := reflect.New(typ)
	fill(v.Elem(), "x", 0)
	data, err := json.Marshal(v.Interface())
	if err != nil {
		t.Fatalf("marshal %s: %v", typ, err)
	}
	fresh := reflect.New(typ)
	if err := json.Unmarshal(data, fresh.Interface()); err != nil {
		t.Fatalf("unmarshal %s: %v", typ, err)
	}
	return Event{ID: id, Type: TaskAssigned, Data: data}, fresh.Interface()
}

// TestDecodeMemoRemembers: a second Decode of the same event into the
// same type is not decoded again: it is a copy (about one allocation,
// where decoding makes a dozen).
func TestDecodeMemoRemembers(t *testing.T) {
	ev := Event{ID: NewID(), Type: TaskFinished, Data: json.RawMessage(`{"step":"s1","attempt":1,"node":"n1","status":"succeeded","exit_code":0,"interrupted":false,"started":"2026-01-02T03:04:05Z","duration":"1ms","cwd":"/tmp/w","user":"nobody","command_hash":"0123456789abcdef"}`)}
	var first TaskFinishedData
	if err := ev.Decode(&first); err != nil {
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(10, func() {
		var d TaskFinishedData
		if err := ev.Decode(&d); err != nil || d.Node != "n1" || d.User != "nobody" {
			t.Fatalf("decode again: %+v, %v", d, err)
		}
	})
	if allocs > 2 {
		t.Errorf("a second Decode of one task.finished: %.0f allocations, want at most 2 (decoded again?)", allocs)
	}
}

// TestDecodeMemoCopiesShareNothing: each Decode of a remembered payload
// gets its own copy: a caller that changes every field it decoded, deep
// inside slices, maps and pointers, changes nothing the next caller gets.
func TestDecodeMemoCopiesShareNothing(t *testing.T) {
	for typ := range memoTypes {
		t.Run(typ.Name(), func(t *testing.T) {
			ev, fresh := filledEvent(t, NewID(), typ)
			for range 3 {
				got := reflect.New(typ)
				if err := ev.Decode(got.Interface()); err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got.Interface(), fresh) {
					t.Fatalf("Decode gave\n%+v\nwant\n%+v", got.Elem(), reflect.ValueOf(fresh).Elem())
				}
				scribble(got.Elem())
				if reflect.DeepEqual(got.Interface(), fresh) {
					t.Fatal("scribble changed nothing: the test shows nothing")
				}
			}
		})
	}
}

// TestDecodeMemoSeesChangedPayload: the memo never hides a payload that
// differs from the one it decoded: the same id with other bytes (a
// forged copy, a republication, a test's edit) is decoded from its own
// bytes, and a payload that does not decode is still an error.
func TestDecodeMemoSeesChangedPayload(t *testing.T) {
	id := NewID()
	ev := Event{ID: id, Type: TaskStarted, Data: json.RawMessage(`{"step":"a","attempt":1,"node":"n1"}`)}
	var d TaskStartedData
	if err := ev.Decode(&d); err != nil || d.Node != "n1" {
		t.Fatalf("decode: %+v, %v", d, err)
	}
	ev.Data = json.RawMessage(`{"step":"a","attempt":2,"node":"n2"}`)
	d = TaskStartedData{}
	if err := ev.Decode(&d); err != nil || d.Node != "n2" || d.Attempt != 2 {
		t.Errorf("the same id with another payload decoded to %+v, %v", d, err)
	}
	ev.Data = json.RawMessage(`{"step":"a","attempt":"two"}`)
	if err := ev.Decode(&d); err == nil {
		t.Error("a payload that does not decode gave no error")
	}
	// In place: the same slice, its bytes changed.
	ev.Data = json.RawMessage(`{"step":"a","attempt":3,"node":"n3"}`)
	if err := ev.Decode(&d); err != nil || d.Node != "n3" {
		t.Fatalf("decode: %+v, %v", d, err)
	}
	copy(ev.Data[len(`{"step":"a","attempt":3,"node":"n`):], "4")
	d = TaskStartedData{}
	if err := ev.Decode(&d); err != nil || d.Node != "n4" {
		t.Errorf("a payload changed in place decoded to %+v, %v", d, err)
	}
	// Another type from the same bytes is its own entry.
	var f TaskFinishedData
	if err := ev.Decode(&f); err != nil || f.Node != "n4" || f.Step != "a" {
		t.Errorf("the same event into another type: %+v, %v", f, err)
	}
}

// TestDecodeMemoBounded: the memo holds at most memoEntries payloads and
// memoBytes (counted with memoCost), the oldest forgotten first; and a
// payload too large is not held at all.
func TestDecodeMemoBounded(t *testing.T) {
	m := &payloadMemo{entries: map[memoKey]*memoEntry{}}
	big := `{"step":"` + strings.Repeat("s", memoBytes/memoCost/3) + `"}`
	for i := range 3 * memoEntries {
		data := []byte(fmt.Sprintf(`{"step":"s%d","attempt":%d}`, i, i))
		if i%50 == 0 {
			data = []byte(big)
		}
		var d TaskStartedData
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		m.store(fmt.Sprint(i), data, reflect.ValueOf(&d))
		if len(m.entries) > memoEntries || len(m.order) != len(m.entries) || m.bytes > memoBytes {
			t.Fatalf("after %d: %d entries (%d in order), %d bytes", i+1, len(m.entries), len(m.order), m.bytes)
		}
	}
	var d TaskStartedData
	last := 3*memoEntries - 1
	if !m.load(fmt.Sprint(last), []byte(fmt.Sprintf(`{"step":"s%d","attempt":%d}`, last, last)), reflect.ValueOf(&d)) || d.Attempt != last {
		t.Errorf("the newest payload is not remembered: %+v", d)
	}
	if m.load("1", []byte(`{"step":"s1","attempt":1}`), reflect.ValueOf(&d)) {
		t.Error("an old payload is still remembered")
	}
	huge := []byte(`{"step":"` + strings.Repeat("s", memoBytes/memoCost) + `"}`)
	if err := json.Unmarshal(huge, &d); err != nil {
		t.Fatal(err)
	}
	m.store("huge", huge, reflect.ValueOf(&d))
	if m.load("huge", huge, reflect.ValueOf(&d)) {
		t.Error("a payload larger than half the memo's budget is held")
	}
}

// TestDecodeMemoTypesHideNoReference: deepCopy copies exported fields
// deeply and unexported ones as they are, so a remembered type may hold
// a slice, map or pointer in an unexported field only inside time.Time
// (whose location is never changed).
func TestDecodeMemoTypesHideNoReference(t *testing.T) {
	var walk func(typ reflect.Type, path string, seen map[reflect.Type]bool)
	walk = func(typ reflect.Type, path string, seen map[reflect.Type]bool) {
		if seen[typ] || typ == reflect.TypeFor[time.Time]() {
			return
		}
		seen[typ] = true
		switch typ.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(typ.Elem(), path+"[]", seen)
		case reflect.Struct:
			for i := range typ.NumField() {
				f := typ.Field(i)
				if !f.IsExported() && computeRefs(f.Type, map[reflect.Type]bool{}) {
					t.Errorf("%s.%s is unexported and holds a reference a copy would share", path, f.Name)
				}
				if !f.IsExported() {
					switch f.Type.Kind() {
					case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
						t.Errorf("%s.%s is unexported and holds a reference a copy would share", path, f.Name)
					}
				}
				walk(f.Type, path+"."+f.Name, seen)
			}
		}
	}
	for typ := range memoTypes {
		walk(typ, typ.Name(), map[reflect.Type]bool{})
	}
}

// TestDecodeMemoFilledTarget: Decode into a value that already holds
// something merges as json.Unmarshal does (fields the payload lacks keep
// theirs), and what it gives is not remembered for the next caller.
func TestDecodeMemoFilledTarget(t *testing.T) {
	ev := Event{ID: NewID(), Type: TaskStarted, Data: json.RawMessage(`{"step":"a","attempt":1}`)}
	filled := TaskStartedData{Node: "kept", PID: 7}
	if err := ev.Decode(&filled); err != nil {
		t.Fatal(err)
	}
	if filled != (TaskStartedData{Step: "a", Attempt: 1, Node: "kept", PID: 7}) {
		t.Errorf("decode into a filled value: %+v", filled)
	}
	var fresh TaskStartedData
	if err := ev.Decode(&fresh); err != nil {
		t.Fatal(err)
	}
	if fresh != (TaskStartedData{Step: "a", Attempt: 1}) {
		t.Errorf("the next decode got %+v: the filled value's fields leaked", fresh)
	}
	again := TaskStartedData{Node: "mine"}
	if err := ev.Decode(&again); err != nil {
		t.Fatal(err)
	}
	if again != (TaskStartedData{Step: "a", Attempt: 1, Node: "mine"}) {
		t.Errorf("a remembered payload into a filled value: %+v", again)
	}
}
