package llm

import (
	"crypto/sha256"
	"encoding/hex"
)

// TemplateHash is the hex SHA-256 (first 16 digits) of the fixed texts
// the planner's prompts are built from (the plan prompt, ModeReact's
// rules, the critique prompt): it changes exactly when a release changes
// what the model is told beside the goal and its inputs. Recorded in
// every model-made plan's provenance (event.PlannerInfo.Template), it is
// half of the telemetry export's planner_version, the planner build the
// other half.
var TemplateHash = func() string {
	h := sha256.New()
	for _, s := range []string{system, reactRules, critiqueSystem} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}()
