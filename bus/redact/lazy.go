package redact

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression of this package (a rule's pattern,
// or one its checks use), compiled on its first use rather than at
// package initialisation: they take a process about 2 ms to compile, and
// most matches never reach them (a rule runs only where one of its hints
// occurs), so a short-lived process — agentctl checking a plan for
// secrets — mostly never compiles them.
// A pattern that does not compile panics on first use, as MustCompile
// would at start; TestEveryPatternCompiles compiles them all.
type lazyRegexp struct {
	src string
	re  func() *regexp.Regexp
}

// lazy is the pattern of src.
func lazy(src string) *lazyRegexp {
	return &lazyRegexp{src: src, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })}
}

// String is the pattern's source text, as (*regexp.Regexp).String.
func (p *lazyRegexp) String() string { return p.src }

// FindAllStringSubmatchIndex is (*regexp.Regexp).FindAllStringSubmatchIndex.
func (p *lazyRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	return p.re().FindAllStringSubmatchIndex(s, n)
}

// MatchString is (*regexp.Regexp).MatchString.
func (p *lazyRegexp) MatchString(s string) bool { return p.re().MatchString(s) }

// FindStringIndex is (*regexp.Regexp).FindStringIndex.
func (p *lazyRegexp) FindStringIndex(s string) []int { return p.re().FindStringIndex(s) }
