package config

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The executor's safety keys: read from the environment, validated with
// every problem named.
func TestExecutorSafetyKeys(t *testing.T) {
	c := Default()
	err := c.ApplyEnv([]string{
		"AGENTIC_EXECUTOR_ENV_ALLOW=PATH, LC_*", "AGENTIC_EXECUTOR_RUN_AS=agentic", "AGENTIC_EXECUTOR_WORKDIR=/srv/agentic-work",
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

// An executor whose steps run as another user (run_as) refuses to start
// with the default work dir, DATA/work, inside the data dir agentd keeps
// 0700 (that user could not reach it): the error names the work dir and
// what to set. With a work dir of its own, or steps run as agentd's user,
// or no executor role, it starts.
func TestRunAsNeedsAWorkDirOutsideTheData(t *testing.T) {
	other := "nobody"
	if u, err := user.Lookup(other); err != nil || u.Uid == strconv.Itoa(os.Geteuid()) {
		other = "root"
		if os.Geteuid() == 0 {
			t.Fatal("the tests need a user nobody (or to run as a user other than root)")
		}
	}
	c := Default()
	c.Data = filepath.Join(t.TempDir(), "data")
	c.Executor.RunAs = other
	err := c.Validate()
	work := filepath.Join(c.Data, "work")
	for _, w := range []string{"executor.workdir", "the default work dir " + work, "run_as user " + other + " cannot reach it",
		"--executor-workdir"} {
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), w) {
			t.Fatalf("run_as %s with the default work dir: Validate = %v, want an error saying %q", other, err, w)
		}
	}
	c.Executor.Workdir = "/srv/agentic-work"
	if err := c.Validate(); err != nil {
		t.Fatalf("with a work dir of its own: %v", err)
	}
	c.Executor.Workdir = ""
	for _, self := range []string{strconv.Itoa(os.Geteuid()), currentName(t)} {
		c.Executor.RunAs = self
		if err := c.Validate(); err != nil {
			t.Fatalf("run_as %s (agentd's own user) with the default work dir: %v", self, err)
		}
	}
	c.Executor.RunAs = other
	c.Roles = []string{"orchestrator", "memory"}
	if err := c.Validate(); err != nil {
		t.Fatalf("no executor role: %v", err)
	}
}

func currentName(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return u.Username
}
