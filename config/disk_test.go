package config

import (
	"errors"
	"strings"
	"testing"
)

func TestDiskKeys(t *testing.T) {
	c := Default()
	c.Disk = DiskConfig{Floor: "5%", JetStreamMaxStore: "2GiB"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	if f, _ := c.DiskFloor(); f.Percent != 5 {
		t.Errorf("floor = %+v", f)
	}
	if n, _ := c.JetStreamMaxStore(); n != 2<<30 {
		t.Errorf("max store = %d", n)
	}
	c.Disk = DiskConfig{Floor: "lots", JetStreamMaxStore: "1KiB"}
	err := c.Validate()
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "disk.floor") || !strings.Contains(err.Error(), "disk.jetstream_max_store: \"1KiB\": at least 1MiB") {
		t.Fatalf("Validate = %v", err)
	}
	c = Default()
	if err := c.ApplyEnv([]string{"AGENTIC_DISK_FLOOR=300MiB"}); err != nil || c.Disk.Floor != "300MiB" {
		t.Fatalf("env: %v, %q", err, c.Disk.Floor)
	}
}
