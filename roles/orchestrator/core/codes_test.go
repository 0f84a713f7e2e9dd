package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodesAreAppendOnly: the codes are the pinned list, in order, with
// new ones only at its end.
func TestCodesAreAppendOnly(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "codes.golden"))
	if err != nil {
		t.Fatal(err)
	}
	var pinned []string
	for _, line := range strings.Split(string(raw), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			pinned = append(pinned, line)
		}
	}
	codes := Codes()
	for i, want := range pinned {
		if i >= len(codes) || string(codes[i]) != want {
			t.Fatalf("code %d is not the pinned %q (codes: %v): codes are never renamed, removed or reordered", i+1, want, codes)
		}
	}
	for i := len(pinned); i < len(codes); i++ {
		t.Errorf("code %q is not pinned: append it to testdata/codes.golden", codes[i])
	}
	seen := map[Code]bool{}
	for _, c := range codes {
		if seen[c] || !c.Known() || strings.ContainsAny(string(c), " -") || strings.ToLower(string(c)) != string(c) {
			t.Errorf("code %q repeated or not a snake_case word", c)
		}
		seen[c] = true
	}
	if Code("exit code 3").Known() {
		t.Error("free text passes as a code")
	}
}

// TestEveryEndHasACode: over random histories, every run that fails or is
// cancelled carries a known code and every run that succeeds none; every
// step that fails or is cancelled carries a known code, and so does every
// step waiting for a retry; a step that succeeded carries none.
func TestEveryEndHasACode(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 10
	}
	seen := map[Code]int{}
	for seed := range uint64(seeds) {
		m := newSim(seed, func(*State) {})
		for range 300 {
			m.step()
		}
		s := policied()
		s.TrackChanges()
		check := func(r *Run) {
			switch {
			case r.Status == RunSucceeded && r.Code != "":
				t.Fatalf("seed %d: run %s succeeded with code %s", seed, r.ID, r.Code)
			case (r.Status == RunFailed || r.Status == RunCancelled) && !r.Code.Known():
				t.Fatalf("seed %d: run %s %s with code %q (%s)", seed, r.ID, r.Status, r.Code, r.Reason)
			}
			seen[r.Code]++
			for _, st := range r.Steps {
				switch {
				case st.Status == StepSucceeded && st.Code != "":
					t.Fatalf("seed %d: step %s/%s succeeded with code %s", seed, r.ID, st.Spec.ID, st.Code)
				case (st.Status == StepFailed || st.Status == StepCancelled) && !st.Code.Known(),
					st.Status == StepPending && st.Error != "" && !st.Code.Known():
					t.Fatalf("seed %d: step %s/%s %s with code %q (%s)", seed, r.ID, st.Spec.ID, st.Status, st.Code, st.Error)
				}
				seen[st.Code]++
			}
		}
		for _, ev := range m.l.events {
			s.Apply(ev)
			for _, c := range s.TakeChanges().Runs {
				check(c.Run)
			}
		}
	}
	if testing.Short() {
		return // fewer histories: not every code is reached
	}
	for _, c := range []Code{CodeExitNonzero, CodeInterrupted, CodePolicyDenied, CodeCancelledByOperator,
		CodeStepFailed, CodeStepCancelled, CodePlanRejected, CodeDependencyFailed, CodeRunEnded,
		CodeNodeLost, CodeNodeDraining, CodeSkippedByOperator} {
		if seen[c] == 0 {
			t.Errorf("no history gave code %s: %v", c, seen)
		}
	}
}
