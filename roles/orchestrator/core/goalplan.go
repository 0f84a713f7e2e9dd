package core

import (
	"github.com/agentic-dev/agentic/bus/event"
	"github.com/agentic-dev/agentic/roles/planner/plan"
)

// The plan that travels in its goal. A plan file is planned the same way
// by every planner (it is parsed, nothing is asked of a model), so the
// submitter can parse it too and send the result in goal.submitted
// (GoalSubmittedData.Plan, next to the file): the fold of the goal then
// plans the run as the fold of a planner's first proposal would, and the
// leader accepts it and assigns its ready steps at once — the planner's
// round trip through the ledger (its outbox, the stream and the ledger,
// three fsyncs and the wake-ups between them) is off the path to the
// first process.
//
// The plan is the operator's word, signed with the goal, as the file is;
// it is taken only in normal form: plan.Normalize, the check every
// planner applies before it proposes, must leave it unchanged (judged by
// plan.IsNormal, which takes a secret by its patterns alone: the values of
// a node's environment would make nodes decide differently; the goal that
// carries the plan has passed the bus's secret rule already, file and
// all), so what the fold takes is what a planner could have proposed,
// with every limit and check of a proposal. Anything else (no plan, a plan
// without a file, one not in normal form — a submitter of another
// version, a hand-made event) is ignored here and the run waits for a
// planner as before; the planners still propose every plan file, and the
// fold ignores a first revision proposed for a run already planned, so
// an old leader (which ignores the field) and an old submitter (which
// does not send it) work as they did.
//
// Replay folds the same goal into the same plan: it is recorded in the
// event, not derived from the file by whatever decoder replays it. A
// history written before (no plan in its goals) replays as it was
// written: its runs are planned by their proposals.

// FileSource is the plan source of a run planned from a plan file: the
// planner's proposal (PlanProposedData.Source) or the plan in its goal.
const FileSource = "file"

// goalPlan returns the plan the fold of d plans its run from, or nil
// (plan.FromGoal: in normal form, next to its file).
func goalPlan(d event.GoalSubmittedData) *event.Plan { return plan.FromGoal(d) }
