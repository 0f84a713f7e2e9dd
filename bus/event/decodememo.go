package event

import (
	"bytes"
	"reflect"
	"sync"
)

// Several folds of one node decode the same event's payload into the same
// type: a task.assigned is decoded by the orchestrator's fold, the run
// index's copy of it, memory's fold and the executor; a task.started and a
// task.finished by most of them too, and a goal.submitted (which may
// carry a plan of thousands of steps) by five. Event.Decode remembers the payloads
// of those types it decoded last (decodeMemo), by event id and type, with
// the exact bytes they were decoded from: a later Decode of the same id
// into the same type, from the same bytes, gets a deep copy of what the
// first decoded instead of decoding again. Decoding is deterministic, so
// the answer is the same; the bytes are compared in full, so an event
// whose payload differs (a forged copy under the same id, or a test that
// changes Data) is decoded anew; and every caller gets its own copy,
// sharing no slice, map or pointer with any other, so a fold that changes
// what it decoded changes nothing another fold sees. Only a Decode into a
// zero value takes part: one into a value that holds something merges
// the payload into it, as json.Unmarshal does.

// Bounds of decodeMemo: entries, and the memory they hold, counted as
// memoCost times their payload's bytes (a decoded plan takes about seven
// times its JSON). A payload of more than half of memoBytes is not held.
const (
	memoEntries = 256
	memoBytes   = 4 << 20
	memoCost    = 8
)

// memoTypes are the payload types Decode remembers: those decoded by
// several folds for every step, and goals.
var memoTypes = map[reflect.Type]bool{
	reflect.TypeFor[GoalSubmittedData](): true,
	reflect.TypeFor[TaskAssignedData]():  true,
	reflect.TypeFor[TaskStartedData]():   true,
	reflect.TypeFor[TaskFinishedData]():  true,
}

// decodeMemo is the process's memo of decoded payloads (see above).
var decodeMemo = &payloadMemo{entries: make(map[memoKey]*memoEntry, memoEntries)}

// payloadMemo holds decoded payloads by event id and type, forgetting the
// oldest first once it holds memoEntries of them or memoBytes (see
// memoCost). It is safe for concurrent use.
type payloadMemo struct {
	mu      sync.Mutex
	entries map[memoKey]*memoEntry
	order   []memoKey // keys in insertion order
	bytes   int       // memory held, counted as memoCost per payload byte
}

type memoKey struct {
	id string
	t  reflect.Type
}

type memoEntry struct {
	data []byte        // the payload, a copy
	v    reflect.Value // what it decodes to: never handed out, only copies of it
}

// load sets *v (v a pointer) to a copy of the payload decoded from data
// for event id, if the memo holds it, and reports whether it did.
func (m *payloadMemo) load(id string, data []byte, v reflect.Value) bool {
	k := memoKey{id, v.Type().Elem()}
	m.mu.Lock()
	e := m.entries[k]
	m.mu.Unlock()
	if e == nil || !bytes.Equal(e.data, data) {
		return false
	}
	// e is never changed once stored: reading it unlocked is safe.
	copyInto(v.Elem(), e.v)
	return true
}

// store remembers a copy of *v, decoded from data for event id.
func (m *payloadMemo) store(id string, data []byte, v reflect.Value) {
	if memoCost*len(data) > memoBytes/2 {
		return // a rare large payload is not worth holding
	}
	k := memoKey{id, v.Type().Elem()}
	e := &memoEntry{data: bytes.Clone(data), v: deepCopy(v.Elem())}
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.entries[k]; ok {
		m.bytes -= memoCost * len(old.data)
	} else {
		m.order = append(m.order, k)
	}
	m.entries[k] = e
	m.bytes += memoCost * len(e.data)
	for len(m.order) > memoEntries || m.bytes > memoBytes {
		oldest := m.order[0]
		m.order = append(m.order[:0], m.order[1:]...)
		if old, ok := m.entries[oldest]; ok {
			m.bytes -= memoCost * len(old.data)
			delete(m.entries, oldest)
		}
	}
}

// deepCopy returns a copy of v that shares no slice, map or pointer with
// it (strings are immutable and shared). Unexported fields are copied as
// they are: the payload types' only ones are time.Time's, whose location
// pointer is never changed.
func deepCopy(v reflect.Value) reflect.Value {
	out := reflect.New(v.Type()).Elem()
	copyInto(out, v)
	return out
}

// copyInto sets dst, settable, to a deep copy of src, of the same type.
func copyInto(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		copyInto(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if hasRefs(src.Type().Elem()) {
			for i := range src.Len() {
				copyInto(s.Index(i), src.Index(i))
			}
		} else {
			reflect.Copy(s, src)
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		it := src.MapRange()
		for it.Next() {
			k := reflect.New(src.Type().Key()).Elem()
			copyInto(k, it.Key())
			val := reflect.New(src.Type().Elem()).Elem()
			copyInto(val, it.Value())
			m.SetMapIndex(k, val)
		}
		dst.Set(m)
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		c := reflect.New(src.Elem().Type()).Elem()
		copyInto(c, src.Elem())
		dst.Set(c)
	case reflect.Array:
		for i := range src.Len() {
			copyInto(dst.Index(i), src.Index(i))
		}
	case reflect.Struct:
		dst.Set(src) // every field, unexported ones included
		for _, i := range refFields(src.Type()) {
			copyInto(dst.Field(i), src.Field(i))
		}
	default:
		dst.Set(src)
	}
}

// fieldsOf caches refFields by type.
var fieldsOf sync.Map // reflect.Type → []int

// refFields lists the exported fields of struct type t that hasRefs: those
// a copy must copy deeply.
func refFields(t reflect.Type) []int {
	if fs, ok := fieldsOf.Load(t); ok {
		return fs.([]int)
	}
	var fs []int
	for i := range t.NumField() {
		if f := t.Field(i); f.IsExported() && hasRefs(f.Type) {
			fs = append(fs, i)
		}
	}
	fieldsOf.Store(t, fs)
	return fs
}

// refTypes caches hasRefs by type.
var refTypes sync.Map // reflect.Type → bool

// hasRefs reports whether a value of type t can hold a slice, map,
// pointer or interface in an exported place, which a copy must not share.
func hasRefs(t reflect.Type) bool {
	if r, ok := refTypes.Load(t); ok {
		return r.(bool)
	}
	r := computeRefs(t, map[reflect.Type]bool{})
	refTypes.Store(t, r)
	return r
}

func computeRefs(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false // a cycle: the first visit answers
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return computeRefs(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && computeRefs(f.Type, seen) {
				return true
			}
		}
	}
	return false
}
