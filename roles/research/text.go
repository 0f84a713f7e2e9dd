package research

import (
	"context"
	"fmt"
	"html"
	"io"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentic-dev/agentic/bus/event"
)

// Markup removed from an HTML source before its text is read: scripts,
// styles and comments whole, then every tag.
var (
	htmlDrop = regexp.MustCompile(`(?is)<script\b.*?</script\s*>|<style\b.*?</style\s*>|<!--.*?-->`)
	htmlTag  = regexp.MustCompile(`(?s)<[^>]*>`)
)

// Text is the readable text of a source's body: an HTML page (by its
// content type, or a body that starts like one) without its markup and
// with its entities decoded; any body with invalid UTF-8 mended and its
// white space collapsed to single spaces. Quotes are checked against it.
func Text(body []byte, contentType string) string {
	s := strings.ToValidUTF8(string(body), "\uFFFD")
	head := strings.ToLower(strings.TrimSpace(s[:min(len(s), 512)]))
	if strings.Contains(strings.ToLower(contentType), "html") || strings.HasPrefix(head, "<!doctype html") || strings.HasPrefix(head, "<html") {
		s = htmlDrop.ReplaceAllString(s, " ")
		s = htmlTag.ReplaceAllString(s, " ")
		s = html.UnescapeString(s)
	}
	return collapse(s)
}

// collapse turns every run of white space into one space and trims the
// ends.
func collapse(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return b.String()
}

// Normalize is quote as Contains compares it: white space collapsed to
// single spaces, the ends trimmed.
func Normalize(quote string) string { return collapse(quote) }

// Contains reports whether quote occurs in text (a Text): white space
// collapsed in both, compared exactly otherwise. An empty quote, or one
// shorter than MinQuote runes, occurs nowhere.
func Contains(text, quote string) bool {
	q := collapse(quote)
	if utf8.RuneCountInString(q) < MinQuote {
		return false
	}
	return strings.Contains(text, q)
}

// MinQuote is the fewest runes a quote may have: a word or two would be
// found in any page.
const MinQuote = 8

// Read reads source s back from store as text, verified against its
// hash and bounded by limit bytes (event.MaxSourceBytes when zero).
func Read(ctx context.Context, store Store, s event.ResearchSource, limit int64) (string, error) {
	if limit <= 0 {
		limit = event.MaxSourceBytes
	}
	r, err := store.Open(ctx, s.SHA256, s.Size, s.Object)
	if err != nil {
		return "", err
	}
	defer r.Close()
	body, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return "", fmt.Errorf("research: read source %d (%s): %w", s.Index, s.URL, err)
	}
	if int64(len(body)) > limit {
		return "", fmt.Errorf("research: source %d (%s) is over %d bytes", s.Index, s.URL, limit)
	}
	return Text(body, s.ContentType), nil
}
