package runner

import (
	"fmt"
	"os"
	"slices"
	"strings"
)

// InheritedEnv are the variables a step inherits from the executor's
// environment, when set there. Everything else the executor has — tokens,
// cloud credentials, NATS urls — is withheld; a step gets more only through
// Spec.Env. PWD is always set to the step's working directory.
var InheritedEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "TMPDIR",
}

// defaultPath is used when the executor's environment has no PATH.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// buildEnv returns the environment of a step: the inherited variables, PWD,
// then extra in key order. Later entries win (os/exec keeps the last of
// duplicate keys).
func buildEnv(extra map[string]string, cwd string) ([]string, error) {
	env := make([]string, 0, len(InheritedEnv)+2+len(extra))
	if _, ok := os.LookupEnv("PATH"); !ok {
		env = append(env, "PATH="+defaultPath)
	}
	for _, k := range InheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
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
