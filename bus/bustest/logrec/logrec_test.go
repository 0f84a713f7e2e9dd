package logrec_test

import (
	"log/slog"
	"testing"

	"github.com/agentic-dev/agentic/bus/bustest/logrec"
)

func TestRecorderKeepsRecordsAndAttrs(t *testing.T) {
	rec := &logrec.Recorder{}
	log := slog.New(rec)
	log.Info("started", "n", 1)
	log.With("component", "ledger").Error("failed", "signer", "exec-1")
	log.Warn("failed")
	if got := rec.Find("failed"); len(got) != 2 || got[0].Attrs["component"] != "ledger" || got[0].Attrs["signer"] != "exec-1" {
		t.Fatalf("Find(failed) = %+v", got)
	}
	if got := rec.Messages(slog.LevelWarn); len(got) != 2 || got[0] != "failed" {
		t.Fatalf("Messages(warn) = %q", got)
	}
	if n := rec.Count(func(r logrec.Record) bool { return r.Attrs["n"] == "1" }); n != 1 {
		t.Fatalf("Count(n=1) = %d", n)
	}
}
