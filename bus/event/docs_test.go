package event_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/agentic-dev/agentic/bus/event"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the payload examples in docs/protocol.md from the types")

// protocolDoc is the page whose "Payloads" section shows payloadExamples.
const protocolDoc = "../../docs/protocol.md"

// payloadExamples is one payload of every event type, as docs/protocol.md
// shows it: each is marshalled and compared with the ```json block that
// follows the doc's "#### `<type>`" heading, so the doc cannot drift from
// the types.
func payloadExamples() map[event.Type]any {
	at := time.Date(2026, 11, 22, 16, 39, 23, 201479010, time.UTC)
	seed, seed1, seed2 := int64(7), int64(8), int64(9)
	build := event.Step{
		ID: "build", Title: "Compile", Subgoal: "ship", Kind: event.KindShell, Run: "make",
		Timeout: event.Duration(10 * time.Minute), Retries: 2, Backoff: event.Duration(time.Second),
		Creates: "bin/app", OnFailure: event.OnFailureAbort, Env: map[string]string{"GOFLAGS": "-mod=mod"},
	}
	deploy := event.Step{
		ID: "ship.deploy", Subgoal: "ship", Kind: event.KindShell, Run: "./deploy.sh staging",
		DependsOn: []string{"build"}, Timeout: event.Duration(90 * time.Second), Idempotent: true,
		Check: "curl -fs https://staging.example.com/health", OnFailure: event.OnFailureContinue, Cwd: "ops",
	}
	done := event.Step{ID: "done", Kind: event.KindNoop, DependsOn: []string{"ship.deploy"}, OnFailure: event.OnFailureAbort}
	return map[event.Type]any{
		event.GoalSubmitted: event.GoalSubmittedData{
			Goal: "Build and ship", PlanName: "ship.yaml", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
			PlanFile: "goal: Build and ship\nsteps:\n  - id: build\n    run: make\n",
			Plan: &event.Plan{Goal: "Build and ship", Steps: []event.Step{
				{ID: "build", Kind: event.KindShell, Run: "make", OnFailure: event.OnFailureAbort}}},
		},
		event.RunCancel: event.RunCancelData{Reason: "wrong branch"},
		event.MemoryPut: event.MemoryPutData{Scope: "shared", Key: "deploy.target", Value: "staging", TTL: event.Duration(2 * time.Hour)},
		event.PlanProposed: event.PlanProposedData{Revision: 1, Source: "llm", Plan: event.Plan{
			Goal:     "Build and ship",
			Subgoals: []event.Subgoal{{ID: "ship", Title: "Build and deploy"}},
			Steps:    []event.Step{build, deploy, done},
		}, Planner: &event.PlannerInfo{Model: "qwen2.5-coder:7b", ServedModel: "qwen2.5-coder:7b", Planner: "llm/1",
			PromptSHA256: "5be0c2a9e4d17f38", Seed: &seed, PromptTokens: 1260, CompletionTokens: 410, Latency: event.Duration(5400 * time.Millisecond),
			Responses: []string{`{"steps":[...]}`, "Sure! Here is a plan:", "Here it is again:", `{"steps":[...]}`},
			Candidates: []event.Candidate{
				{Response: 0, Seed: &seed, Score: 13, Risk: 1, Steps: 3, History: 0},
				{Response: 2, Seed: &seed1, Error: "model qwen2.5-coder:7b, twice: the model did not give a valid plan:\nno JSON object in the answer"},
				{Response: 3, Seed: &seed2, Score: 3.5, Steps: 3, History: 0.1, Chosen: true},
			},
			Scoring: "candidates/1: ...", Build: "v0.9.0", Template: "9c1d4e7a2b6f0385"}},
		event.PlanRejected:  event.PlanRejectedData{Error: `ship.yaml:5:18: steps[1].depends_on[0]: unknown step "bulid" (did you mean "build"?)`},
		event.LeaderElected: event.LeaderElectedData{Decision: event.Decision{Epoch: 3}, Leader: "node-a"},
		event.PlanAccepted:  event.PlanAcceptedData{Decision: event.Decision{Epoch: 3}, Revision: 1},
		event.TaskAssigned:  event.TaskAssignedData{Decision: event.Decision{Epoch: 3}, Step: deploy, Attempt: 1, Node: "node-b", ReadyAt: at},
		event.TaskCancel:    event.TaskCancelData{Decision: event.Decision{Epoch: 3}, Step: "ship.deploy", Attempt: 1, Node: "node-b", Reason: "run cancelled: wrong branch", Code: "cancelled_by_operator"},
		event.RunFinished:   event.RunFinishedData{Decision: event.Decision{Epoch: 3}, Status: event.RunFailed, Reason: "step build failed: exit status 2", Code: "step_failed"},
		event.ExecutorOnline: event.ExecutorOnlineData{Slots: 4, Incarnation: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d", Queue: 4, Capabilities: []string{"docker"}, Version: "v0.3.0",
			Tools:   []event.ToolReport{{Name: "fs/read_text_file", Hash: "sha256:7d1e5c0a4b93", User: "agentic", Definition: &readTextFile}},
			Plugins: []event.PluginReport{{Plugin: "fs", Manifest: "sha256:0b6a1f3c9d2e", User: "agentic"}}},
		event.TaskStarted: event.TaskStartedData{Step: "ship.deploy", Attempt: 1, Node: "node-b", PID: 4242},
		event.TaskFinished: event.TaskFinishedData{
			Step: "ship.deploy", Attempt: 1, Node: "node-b", Status: event.TaskFailed, Class: event.ClassTransient,
			ExitCode: -1, Error: "interrupted: the executor shut down during the attempt", Interrupted: true,
			Started: at, Duration: event.Duration(12*time.Second + 345*time.Millisecond),
			Cwd: "/srv/work/ops", User: "agentic", OutputTail: "deploying to staging...\n", CommandHash: "3f2a9c0d1e4b5a6f",
		},
		event.MemoryWritten: event.MemoryWrittenData{
			Scope: "shared", Key: "deploy.target", Value: "staging",
			Expires: at.Add(2 * time.Hour), Request: "01a20420-6b41-774d-852b-16f808230ca0",
		},
		event.ClusterSettings: event.ClusterSettingsData{Revision: 2, Streams: event.ClusterStreamsData{
			Events: event.StreamSettingsData{MaxAge: "720h0m0s", MaxBytes: 4 << 30, Replicas: 3},
			Logs:   event.StreamSettingsData{MaxAge: "168h0m0s", MaxBytes: 1 << 30, Replicas: 1},
			Repair: event.StreamsRepairRestore,
		}, Lease: event.LeaseSettingsData{TTL: event.Duration(1500 * time.Millisecond)},
			Planning: event.PlanningSettingsData{ClaimTimeout: event.Duration(30 * time.Second)}},
		event.Rejected: event.RejectedData{
			Code: event.RejectRoleNotAllowed, Reason: "node-c with roles [executor] may not emit plan.proposed",
			Subject: "agentic.ev.plan.proposed", Signer: "node-c", ClaimedType: "plan.proposed",
			ClaimedID: "01a20420-6b41-774d-852b-16f808230ca1",
		},
		event.Gap: event.GapData{From: 1041, To: 1044},
		event.RejectedSummary: event.RejectedSummaryData{
			From: 20412, To: 20511, Count: 100,
			ByCode:   map[event.RejectCode]uint64{event.RejectBadSignature: 97, event.RejectUnknownSigner: 3},
			BySigner: map[string]uint64{"node-b": 97, "unknown": 3},
		},
		event.NodeJoined: event.NodeData{
			Decision: event.Decision{Epoch: 3}, Node: "node-b", Incarnation: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d",
			Roles: []string{"executor"}, Capabilities: []string{"docker"}, Slots: 4, Version: "v0.3.0", Addr: "10.0.0.12:7946",
		},
		event.NodeSuspect: event.NodeData{
			Decision: event.Decision{Epoch: 3}, Node: "node-b", Incarnation: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d",
			Roles: []string{"executor"}, Slots: 4, Addr: "10.0.0.12:7946", Reason: "suspected by node-a",
		},
		event.NodeFailed: event.NodeData{
			Decision: event.Decision{Epoch: 3}, Node: "node-b", Incarnation: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d",
			Roles: []string{"executor"}, Slots: 4, Addr: "10.0.0.12:7946", Reason: "no answer to probes",
		},
		event.NodeLeft: event.NodeData{
			Decision: event.Decision{Epoch: 3}, Node: "node-b", Incarnation: "0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d",
			Roles: []string{"executor"}, Slots: 4, Addr: "10.0.0.12:7946", Reason: "drained",
		},
		event.NodeDrain: event.NodeDrainData{Node: "node-b", Reason: "kernel upgrade"},
		event.AlarmRaised: event.AlarmData{Node: "node-b", Alarm: event.AlarmNoSpace, Check: "disk",
			Reason: "data dir /var/lib/agentic has 41 MiB free, below the floor of 256 MiB", Since: at},
		event.AlarmCleared: event.AlarmData{Node: "node-b", Alarm: event.AlarmNoSpace, Check: "disk",
			Reason: "data dir /var/lib/agentic has 3.2 GiB free", Since: at},
		event.StepDecided: event.StepDecidedData{Step: "ship.deploy", Action: event.StepRetry, Reason: "checked: the deploy never began"},
		event.CredentialRevoked: event.CredentialRevokedData{Kind: "node", ID: "node-c", Before: at,
			NATSUsers: []string{"UDXU4RCSJNZOIQHZNWXHXORDPRTGNJAHAHFRGZNEEJCPQTT2M7NLCNF4"}, Reason: "the host was lost"},
		event.PolicyApplied: event.PolicyAppliedData{Base: 3, Name: "ops", Hash: "sha256:9c1d4e0b7f2a",
			Text:   "name: ops\nrules:\n  - pattern: rm -rf\n    level: high\n    require_confirmation: true\n",
			Source: event.PolicyFromApply, Reason: "gate recursive deletes"},
		event.GateOpened: event.GateOpenedData{Decision: event.Decision{Epoch: 3}, Step: "clean", Attempt: 1, Revision: 1,
			Kind: event.GatePolicy, Subject: "sha256:5e0c2b7d91aa", Policy: event.PolicyRef{Version: 4, Hash: "sha256:9c1d4e0b7f2a"},
			Verdict: &event.Verdict{Action: "confirm", Level: "high", Rule: "rm -rf",
				Why: "rm -rf build: rule \"rm -rf\" (high) requires confirmation", Reversible: true,
				Highlights: []event.Highlight{{Text: "-rf", Flags: []string{"-r", "-f"}, Start: 3, End: 6, Rule: "rm -rf", Why: "recursive force delete"}}},
			Approvals: 1, Expires: at.Add(24 * time.Hour), OnExpiry: event.GateSkip},
		event.GateDecided: event.GateDecidedData{Step: "clean", Subject: "sha256:5e0c2b7d91aa", Action: event.GateEdit,
			Command: "rm -r build", Reason: "no force needed"},
		event.GateClosed: event.GateClosedData{Decision: event.Decision{Epoch: 3}, Step: "clean", Subject: "sha256:5e0c2b7d91aa",
			Action: event.GateSkip, Code: "gate_expired", Reason: "no answer within 24h0m0s"},
		event.RunPause:  event.RunBrakeData{Reason: "checking the staging database first"},
		event.RunResume: event.RunBrakeData{Reason: "database checked"},
		event.RootAdded: event.RootAddedData{Key: "4d0ec3a0d03fefff93a9bcce2a24b406d46f44aeff1f7787daedb13caafa402c", KeyID: "9212cc8748a1dab2",
			Reason: "yearly rotation", Proof: "e18c5fdf82a5ea69e0a5f95ae090881d8c5a43a1c90dbf2a8842b1ae30ac76d9c134052b8e8dfbefb62cbac2d528ebb1fb9885dd14297e538f04e1cdf4cbaf04"},
		event.RootRetired: event.RootRetiredData{KeyID: "7b3e0d51a94c2f68", Reason: "yearly rotation: cutover"},
		event.GateDecidedFor: event.GateDecidedForData{GateDecidedData: event.GateDecidedData{Step: "clean",
			Subject: "sha256:5e0c2b7d91aa", Action: event.GateAccept, Reason: "checked the build dir"}, Operator: "alice"},
		event.RunPausedFor:          event.RunBrakeForData{RunBrakeData: event.RunBrakeData{Reason: "checking the staging database first"}, Operator: "alice"},
		event.RunResumedFor:         event.RunBrakeForData{RunBrakeData: event.RunBrakeData{Reason: "database checked"}, Operator: "alice"},
		event.RunCancelRequestedFor: event.RunCancelForData{RunCancelData: event.RunCancelData{Reason: "wrong branch"}, Operator: "alice"},
		event.MemoryRecorded: event.MemoryRecordedData{Scope: event.FactScopeFamily, Key: "nginx.version", Value: "1.24.0",
			Tags: []string{"infra"}, TTL: event.Duration(24 * time.Hour), Step: "probe", Attempt: 1, Status: event.TaskSucceeded, From: event.FactFromStdout},
		event.MemoryReleased: event.MemoryQuarantineData{Scope: "shared", Key: "deploy.region", Seq: 4182, Reason: "checked by hand"},
		event.MemoryDropped:  event.MemoryQuarantineData{Scope: "shared", Key: "deploy.region", Reason: "wrong region"},
		event.MemoryPruned:   event.MemoryPrunedData{Decision: event.Decision{Epoch: 3, Basis: 4200}, Before: at},
		event.RunRated:       event.RunRatedData{Rating: event.RatingDown, Reason: "deployed to the wrong region", Operator: "alice"},
		event.ProposalCreated: event.ProposalCreatedData{ID: "p-3f9a1c22b07e", Pattern: "timeouts", Subject: "nightly/fetch", Family: "nightly",
			Change:   event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(4 * time.Minute)}},
			Rollback: event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "nightly"}},
			Evidence: []uint64{4120, 4133, 4151}, RootCause: "step fetch of family nightly timed out 3 times at 1m0s",
			ExpectedEffect: "its attempts finish within 4m0s", Risk: "medium", Approvers: 1,
			Validation: event.Validation{Method: "replay", Summary: "of 5 recorded attempts under 4m0s: 2 pass, 3 unknown (timed out at 1m0s)", Pass: 2, Retry: 3},
			Baseline:   event.Rate{Errors: 3, Total: 5, From: at.Add(-24 * time.Hour), To: at},
			DraftedBy:  event.DraftedByModel, ChangeBy: event.DraftedByRules, RiskNote: "a hung fetch holds its executor up to 4m0s",
			DraftNote: "the model's change was dropped, the rule's kept: improve: forbidden change: 2 recorded attempts that succeeded would have timed out under a default timeout of 30s"},
		event.ProposalApproved: event.ProposalDecidedData{Proposal: "p-3f9a1c22b07e", Reason: "the fetch is slow at night"},
		event.ProposalRejected: event.ProposalDecidedData{Proposal: "p-3f9a1c22b07e", Reason: "fix the mirror instead"},
		event.ProposalDecidedFor: event.ProposalDecidedForData{Operator: "alice", Action: event.ProposalApprove,
			ProposalDecidedData: event.ProposalDecidedData{Proposal: "p-3f9a1c22b07e", Reason: "the fetch is slow at night"}},
		event.ProposalApplied:     event.ProposalAppliedData{Proposal: "p-3f9a1c22b07e", Validation: event.Validation{Method: "replay", Summary: "unchanged since creation", Pass: 2, Retry: 3}, Epoch: 3},
		event.ProposalImplemented: event.ProposalOutcomeData{Proposal: "p-3f9a1c22b07e", Baseline: event.Rate{Errors: 3, Total: 5}, After: event.Rate{Errors: 0, Total: 4}, Threshold: 0.25, Reason: "error rate 0% (0 of 4) against 60% (3 of 5) before"},
		event.ProposalReverted:    event.ProposalOutcomeData{Proposal: "p-3f9a1c22b07e", Baseline: event.Rate{Errors: 3, Total: 5}, After: event.Rate{Errors: 4, Total: 4}, Threshold: 0.25, Reason: "error rate 100% (4 of 4) against 60% (3 of 5) before: worse by more than 25%"},
		event.TuningChanged: event.TuningChangedData{Proposal: "p-3f9a1c22b07e", Epoch: 3,
			Change: event.Change{Kind: event.ChangeStepDefaults, Setting: event.SettingDefaultsTimeout, Defaults: &event.StepDefaults{Family: "nightly", Timeout: event.Duration(4 * time.Minute)}}},
		event.ImproveEval: event.ImproveEvalData{Now: true, Every: event.Duration(6 * time.Hour)},
		event.ArtifactStored: event.ArtifactStoredData{Name: "dist/app.tar.gz", Size: 18734112,
			SHA256: "5f0c7a1e3b9d2c4f6a8e0b1d3c5e7f9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e", Object: "sha256/5f0c7a1e3b9d2c4f6a8e0b1d3c5e7f9a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d0e",
			Step: "build", Attempt: 1, Retention: event.RetentionRun},
		event.KbNoted: event.KbNotedData{ID: "019a7c2e-5f1b-7c3d-9e4f-0a1b2c3d4e5f/notes/1", Step: "notes", Attempt: 1, Research: "read",
			Question: "Which port does the service listen on?", Critical: true, Claim: "The service listens on port 8443.", Confidence: 0.9,
			Citations: []event.Citation{
				{SHA256: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", Quote: "listens on port 8443", URL: "https://docs.example.com/ports.html", Host: "docs.example.com"},
				{SHA256: "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752", Quote: "port 8443 (TLS)", URL: "https://wiki.example.org/service", Host: "wiki.example.org"},
			}, Dropped: 1, Family: "nightly", Source: "llm"},
		event.PlanClaimed: event.PlanClaimedData{Until: at.Add(4 * time.Minute), Source: "llm"},
		event.PlanReplanRequested: event.PlanReplanRequestedData{Decision: event.Decision{Epoch: 3}, Revision: 1, Replans: 1, Tokens: 1840,
			Goal: event.GoalSubmittedData{Goal: "Serve /srv/www on port 8080", Text: "Serve /srv/www on port 8080"}, Source: "llm",
			Plan: event.Plan{Goal: "Serve /srv/www on port 8080", Steps: []event.Step{
				{ID: "www", Kind: event.KindShell, Run: "mkdir -p /srv/www", OnFailure: event.OnFailureReplan},
				{ID: "serve", Kind: event.KindShell, Run: "systemctl start www", DependsOn: []string{"www"}, OnFailure: event.OnFailureReplan},
			}},
			Done: []string{"www"},
			Failure: event.StepFailure{Step: "serve", Attempt: 1, Command: "systemctl start www", ExitCode: 5, Class: event.ClassLogic,
				Error: "exit status 5", Output: "Failed to start www.service: Unit www.service not found.\n"}},
		event.CritiqueRequested: event.CritiqueRequestedData{Decision: event.Decision{Epoch: 3, Basis: 412}, Step: "review", Attempt: 1,
			Target: "serve", Criteria: "the page answers 200 and shows the site's title",
			Goal: "Serve /srv/www on port 8080", TargetStatus: event.StepSucceeded,
			Output: "HTTP/1.1 200 OK\n<title>www</title>\n"},
		event.CritiqueRecorded: event.CritiqueRecordedData{Step: "review", Attempt: 1, Verdict: event.VerdictPass,
			Judgement: "The response is 200 and its title is the site's.",
			Planner: &event.PlannerInfo{Model: "qwen2.5-coder:7b", ServedModel: "qwen2.5-coder:7b", Planner: "llm-critique/1",
				PromptSHA256: "9f2c41d0b7e35a86", PromptTokens: 312, CompletionTokens: 41, Latency: event.Duration(1200 * time.Millisecond),
				Responses: []string{`{"verdict":"pass","judgement":"The response is 200 and its title is the site's."}`}}},
		event.PolicyRecorded: event.PolicyAppliedData{Base: 0, Name: "default", Hash: "sha256:41b07c9e3d55",
			Text: "name: default\ndefault: allow\n", Source: event.PolicyFromBootstrap},
		event.PluginAdded: event.PluginAddedData{Manifest: fsManifest, Reason: "read the notes"},
		event.PluginApproved: event.PluginApprovedData{Plugin: "fs", Manifest: "sha256:0b6a1f3c9d2e",
			Tools: []event.ToolPin{{Hash: "sha256:7d1e5c0a4b93", Definition: readTextFile}}, Reason: "reviewed the descriptions"},
		event.PluginRemoved: event.PluginRemovedData{Plugin: "fs", Reason: "not needed any more"},
		event.PROpened: event.PROpenedData{Step: event.GitFinishStep, Attempt: 1, Node: "node-b",
			Repo: "/srv/repos/service", Remote: "origin", Base: "main", BaseCommit: "9c1f0e2d3b4a5c6d7e8f90a1b2c3d4e5f6a7b8c9",
			Head:        "agentic/0196f3c2-8a11-7c3e-9d2b-6e5f4a3b2c1d",
			Commits:     []event.GitCommit{{ID: "4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d2e3f", Step: "fix", Subject: "fix(plan): Fix the timeout"}},
			DiffHash:    "3a7bd3e2360a3d29eea436fcfb7e44c735d117c42d1c1835420b6b9942dd4f1b",
			Validations: []event.GitValidation{{Step: "test", Status: event.TaskSucceeded}},
			Title:       "Fix the timeout", Draft: true, Forge: "github", URL: "https://github.example.com/acme/service/pull/42", Number: 42},
	}
}

// fsManifest and readTextFile are the plugin examples of docs/protocol.md.
var (
	fsManifest = event.PluginManifest{
		Name:        "fs",
		Description: "the reference MCP filesystem server",
		Command:     []string{"node", "/opt/mcp/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", "/srv/data"},
		Grants:      event.PluginGrants{Filesystem: []string{"/srv/data"}},
		PathArgs:    []string{"path", "paths", "source", "destination"},
	}
	readTextFile = event.ToolDefinition{
		Name: "read_text_file", Title: "Read Text File",
		Description: "Read the complete contents of a file from the file system as text.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`),
		Annotations: json.RawMessage(`{"readOnlyHint":true}`),
	}
)

// marshalExample is the doc's form of a payload: indented JSON, HTML
// characters as they are.
func marshalExample(t *testing.T, v any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestPayloadDocs: docs/protocol.md shows, for every event type, exactly
// what its payload type marshals to. Run with -update-docs after changing a
// payload, and review the diff.
func TestPayloadDocs(t *testing.T) {
	doc, err := os.ReadFile(protocolDoc)
	if err != nil {
		t.Fatal(err)
	}
	examples := payloadExamples()
	lines := strings.SplitAfter(string(doc), "\n")
	for _, spec := range event.Types() {
		if _, ok := examples[spec.Type]; !ok {
			t.Errorf("no payload example for %s: add one to payloadExamples and a \"#### `%s`\" section to docs/protocol.md", spec.Type, spec.Type)
		}
	}
	for typ, v := range examples {
		want := marshalExample(t, v)
		start, end, ok := exampleBlock(lines, typ)
		if !ok {
			t.Errorf("docs/protocol.md has no \"#### `%s`\" heading followed by a ```json block; it should show:\n%s", typ, want)
			continue
		}
		got := strings.Join(lines[start:end], "")
		if got == want {
			continue
		}
		if *updateDocs {
			lines = append(lines[:start], append([]string{want}, lines[end:]...)...)
			continue
		}
		t.Errorf("docs/protocol.md shows for %s:\n%s\nthe type marshals to:\n%s(run go test ./bus/event -run TestPayloadDocs -update-docs)", typ, got, want)
	}
	if *updateDocs {
		if err := os.WriteFile(protocolDoc, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every example decodes back into its type unchanged.
	for typ, v := range examples {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		back := newOf(v)
		if err := json.Unmarshal(b, back); err != nil {
			t.Errorf("%s: decode its example: %v", typ, err)
			continue
		}
		if again, _ := json.Marshal(back); !bytes.Equal(again, b) {
			t.Errorf("%s: example changes in a round trip:\n%s\n%s", typ, b, again)
		}
	}
}

// exampleBlock finds the lines of the ```json block that follows the
// "#### `typ`" heading: [start, end) excludes the fences.
func exampleBlock(lines []string, typ event.Type) (start, end int, ok bool) {
	heading := "#### `" + string(typ) + "`"
	for i, l := range lines {
		if !strings.HasPrefix(l, heading) {
			continue
		}
		for j := i + 1; j < len(lines); j++ {
			switch {
			case strings.HasPrefix(lines[j], "#"):
				return 0, 0, false
			case strings.TrimSpace(lines[j]) == "```json":
				for k := j + 1; k < len(lines); k++ {
					if strings.TrimSpace(lines[k]) == "```" {
						return j + 1, k, true
					}
				}
				return 0, 0, false
			}
		}
	}
	return 0, 0, false
}

// newOf returns a pointer to a new zero value of v's type.
func newOf(v any) any { return reflect.New(reflect.TypeOf(v)).Interface() }
