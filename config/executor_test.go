package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The executor's safety keys: read from the environment, validated with
// every problem named.
func TestExecutorSafetyKeys(t *testing.T) {
	c := Default()
	err := c.ApplyEnv([]string{
		"AGENTIC_EXECUTOR_ENV_ALLOW=PATH, LC_*", "AGENTIC_EXECUTOR_RUN_AS=agentic",
		"AGENTIC_EXECUTOR_MAX_OPEN_FILES=1024", "AGENTIC_EXECUTOR_MAX_ADDRESS_SPACE=8GiB", "AGENTIC_EXECUTOR_LANDLOCK=true",
	})
	if err != nil {
		t.Fatal(err)
	}
	e := c.Executor
	if !slices.Equal(e.EnvAllow, []string{"PATH", "LC_*"}) || e.RunAs != "agentic" || e.MaxOpenFiles != 1024 ||
		e.MaxAddressSpace != "8GiB" || e.AddressSpaceBytes() != 8<<30 || !e.Landlock {
		t.Fatalf("executor config %+v", e)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if d := Default(); d.Executor.RunAs != "" || d.Executor.EnvAllow != nil || d.Executor.MaxOpenFiles != 0 ||
		d.Executor.AddressSpaceBytes() != 0 || d.Executor.Landlock {
		t.Fatalf("defaults %+v: want agentd's own user, the runner's allowlist, no limits, no Landlock", d.Executor)
	}

	c.Executor.EnvAllow = []string{"A=B"}
	c.Executor.MaxOpenFiles = -1
	c.Executor.MaxAddressSpace = "lots"
	err = c.Validate()
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Validate = %v", err)
	}
	for _, w := range []string{`executor.env_allow: env allowlist: "A=B" is not a variable name`,
		"executor.max_open_files: must be 0 (agentd's own) or more, got -1", "executor.max_address_space: "} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Validate error lacks %q:\n%v", w, err)
		}
	}
	c.Executor.EnvAllow, c.Executor.MaxOpenFiles, c.Executor.MaxAddressSpace = nil, 0, "512KiB"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "below 1MiB") {
		t.Errorf("Validate(512KiB) = %v", err)
	}
}
