package redact

import (
	"encoding/json"
	"fmt"
	"sort"
)

// refScan is scan as it was before the one-pass walker: json.Unmarshal
// into an `any` (data it refuses judged as text), then the tree walked
// with the keys of each object in sorted order. The walker must report
// what it reports, for every input.
func (set Set) refScan(data []byte, withKnown bool) (Finding, bool) {
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		sp := find(string(data), set, withKnown, true)
		if len(sp) == 0 {
			return Finding{}, false
		}
		return Finding{Kind: sp[0].kind(), Rule: sp[0].id}, true
	}
	return set.refFindValue(v, "", withKnown)
}

func (set Set) refFindValue(v any, path string, withKnown bool) (Finding, bool) {
	switch x := v.(type) {
	case string:
		if sp := find(x, set, withKnown, true); len(sp) > 0 {
			return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
		}
	case []any:
		for i, e := range x {
			if f, ok := set.refFindValue(e, fmt.Sprintf("%s[%d]", path, i), withKnown); ok {
				return f, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := joinPath(path, k)
			if s, isStr := x[k].(string); isStr {
				if sp := find(k+"="+s, set, withKnown, true); len(sp) > 0 {
					return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: p}, true
				}
				continue
			}
			if sp := find(k, set, withKnown, true); len(sp) > 0 {
				return Finding{Kind: sp[0].kind(), Rule: sp[0].id, Path: path}, true
			}
			if f, ok := set.refFindValue(x[k], p, withKnown); ok {
				return f, true
			}
		}
	}
	return Finding{}, false
}
