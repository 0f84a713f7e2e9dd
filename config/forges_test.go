package config

import (
	"strings"
	"testing"
)

// A forge needs an http(s) API URL without credentials and an absolute
// token file; each problem names its key.
func TestValidateForges(t *testing.T) {
	c := Default()
	c.Executor.Forges = map[string]ForgeConfig{
		"github": {API: "https://api.github.com", TokenFile: "/etc/agentic/github.token"},
		"bad":    {API: "ftp://x", TokenFile: "token"},
		"creds":  {API: "https://u:p@gitea.example.com/api/v1", TokenFile: "/t"},
	}
	err := c.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{"executor.forges.bad.api", "executor.forges.bad.token_file", "executor.forges.creds.api", "must not hold credentials"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v: does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "executor.forges.github") {
		t.Errorf("a good forge refused: %v", err)
	}
}
