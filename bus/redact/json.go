package redact

import (
	"encoding/json"
	"sort"
)

// FindJSON is Find for a JSON document (an event payload): it judges the
// decoded strings, so JSON escaping neither hides a secret nor makes one
// up ("$PW\n" in a JSON string is a reference followed by a newline). A
// member "KEY": "value" is judged as KEY=value, so {"DB_PASSWORD": "x"}
// is a secret while {"DB_PASSWORD": "$DB_PASSWORD"} is not. Data that is
// not JSON is judged as text. It uses the Latest set.
func FindJSON(data []byte) (kind string, ok bool) { return Latest.FindJSON(data) }

// FindJSON is FindJSON by the patterns of set.
func (set Set) FindJSON(data []byte) (kind string, ok bool) {
	// Cheap pre-check on the raw bytes: most payloads hold nothing that
	// looks like a secret and are never decoded.
	if _, hit := set.Find(string(data)); !hit {
		return "", false
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return set.Find(string(data))
	}
	return set.findValue(v)
}

// FindMember is FindJSON's verdict on one JSON member "key": "value" (or an
// environment variable key=value) by the Latest set: it is judged as the
// text key=value, so DB_PASSWORD=x is a secret and DB_PASSWORD=$DB_PASSWORD
// is not. Checks that run before an event is built (a plan's env, its
// commands) use it to refuse what signing would refuse.
func FindMember(key, value string) (kind string, ok bool) { return Latest.FindMember(key, value) }

// FindMember is FindMember by the patterns of set.
func (set Set) FindMember(key, value string) (kind string, ok bool) {
	return set.Find(key + "=" + value)
}

func (set Set) findValue(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return set.Find(x)
	case []any:
		for _, e := range x {
			if k, ok := set.findValue(e); ok {
				return k, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if s, isStr := x[k].(string); isStr {
				if kind, ok := set.FindMember(k, s); ok {
					return kind, true
				}
				continue
			}
			if kind, ok := set.findValue(x[k]); ok {
				return kind, true
			}
		}
	}
	return "", false
}
