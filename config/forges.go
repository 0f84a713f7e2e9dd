package config

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// ForgeConfig is one forge git runs open pull requests on (examples/README.md,
// "Git runs"): a plan's git.forge names it, never its token.
type ForgeConfig struct {
	// API is the forge's REST API base URL, GitHub-compatible
	// (https://api.github.com, https://gitea.example.com/api/v1).
	API string `yaml:"api"`
	// TokenFile is the absolute path of a file holding the token (one
	// line), read at each use: for the API and for git over https.
	TokenFile string `yaml:"token_file"`
}

// validateForges reports the problems of executor.forges.
func (c *Config) validateForges(bad func(key, format string, args ...any)) {
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range c.Executor.Forges {
			if !yield(k) {
				return
			}
		}
	}) {
		f := c.Executor.Forges[name]
		key := "executor.forges." + name
		if err := checkName(name); err != nil {
			bad(key, "%v", err)
		}
		if u, err := url.Parse(f.API); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			bad(key+".api", "%q must be the forge's REST API URL (https://api.github.com, https://host/api/v1)", f.API)
		} else if u.User != nil {
			bad(key+".api", "must not hold credentials: put the token in token_file")
		}
		if f.TokenFile == "" || !filepath.IsAbs(f.TokenFile) || strings.ContainsAny(f.TokenFile, "\n\r") {
			bad(key+".token_file", "%q must be the absolute path of a file holding the token", f.TokenFile)
		}
	}
}
