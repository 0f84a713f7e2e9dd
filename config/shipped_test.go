package config_test

import (
	"testing"

	"github.com/agentic-dev/agentic/config"
)

// TestShippedConfigLoads keeps deploy/agentd.yaml in step with the code.
func TestShippedConfigLoads(t *testing.T) {
	c, err := config.Load("../deploy/agentd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if c.Name != "node-a" || c.Executor.Slots != 8 || len(c.Roles) != 5 {
		t.Fatalf("loaded %+v", c)
	}
}
