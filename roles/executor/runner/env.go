package runner

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/agentic-dev/agentic/internal/envallow"
)

// DefaultEnvAllow are the variables a step inherits from the executor's
// environment when Options.EnvAllow is nil. A name ending in * stands for
// every variable it begins (LC_* is LC_ALL, LC_CTYPE…). Everything else the
// executor has — tokens, cloud credentials, NATS urls — is withheld; a step
// gets more only through Spec.Env. PWD is always set to the step's working
// directory.
var DefaultEnvAllow = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LANGUAGE", "LC_*", "TERM", "TZ", "TMPDIR",
}

// defaultPath is used when the executor's environment has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// EnvAllowed reports whether the variable name is on the allowlist allow
// (exact names, or prefixes ending in *: internal/envallow).
func EnvAllowed(allow []string, name string) bool { return envallow.Allowed(allow, name) }

// CheckEnvAllow reports the first entry of an allowlist that is not a
// variable name, or a name followed by one *.
func CheckEnvAllow(allow []string) error { return envallow.Check(allow) }

// buildEnv returns the environment of a step: a default PATH, the
// executor's variables on the allowlist (in the order of the executor's
// environment; an inherited PATH replaces the default), the
// account's HOME, USER and LOGNAME when the step runs as another user, PWD,
// then extra in key order. Later entries win (os/exec keeps the last of
// duplicate keys).
func buildEnv(allow []string, extra map[string]string, cwd string, as *account) ([]string, error) {
	if allow == nil {
		allow = DefaultEnvAllow
	}
	env := make([]string, 1, len(allow)+5+len(extra))
	env[0] = "PATH=" + defaultPath // replaced by an inherited PATH
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if EnvAllowed(allow, k) {
			env = append(env, kv)
		}
	}
	if as != nil && as.cred != nil {
		env = append(env, "HOME="+as.home, "USER="+as.name, "LOGNAME="+as.name)
	}
	env = append(env, "PWD="+cwd)
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := extra[k]
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return nil, fmt.Errorf("env: invalid variable name %q", k)
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, fmt.Errorf("env: value of %s contains a NUL byte", k)
		}
		env = append(env, k+"="+v)
	}
	return env, nil
}
