package web

import (
	"html/template"
	"strings"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

// funcs are the templates' helpers. None of them returns trusted HTML:
// everything they give goes through html/template's escaping.
var funcs = template.FuncMap{
	"fmtTime": fmtTime,
	"join":    func(s []string) string { return strings.Join(s, ", ") },
	"shortID": shortID,
	"add":     func(a, b int) int { return a + b },
	// deref reads a *bool: in a template a non-nil pointer is true
	// whatever it points to.
	"deref":    func(b *bool) bool { return b != nil && *b },
	"dur":      func(d event.Duration) string { return time.Duration(d).Round(time.Millisecond).String() },
	"diff":     diffOf,
	"asset":    assetURL,
	"editWord": editWord,
	"command": func(st *event.Step) string {
		if st == nil {
			return ""
		}
		return commandOf(*st)
	},
}

// fmtTime shows a time in UTC to the second ("" for none).
func fmtTime(v any) string {
	var t time.Time
	switch x := v.(type) {
	case time.Time:
		t = x
	case *time.Time:
		if x == nil {
			return ""
		}
		t = *x
	}
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
