package api

import (
	"context"
	"iter"

	"github.com/agentic-dev/agentic/internal/apiwire"
)

// The query API's wire types — requests, answers, pages, errors, method
// names — are declared in internal/apiwire, on the floor of the layers, so
// that roles may use them without importing node; api re-exports each
// name, so a caller of the server and client needs one import.
type (
	Alarm                   = apiwire.Alarm
	AlarmsListRequest       = apiwire.AlarmsListRequest
	AuditLine               = apiwire.AuditLine
	AuditPage               = apiwire.AuditPage
	AuditRequest            = apiwire.AuditRequest
	BackupRequest           = apiwire.BackupRequest
	BackupResult            = apiwire.BackupResult
	BackupStream            = apiwire.BackupStream
	Caller                  = apiwire.Caller
	CommandStat             = apiwire.CommandStat
	CommandStats            = apiwire.CommandStats
	CommandsRequest         = apiwire.CommandsRequest
	CredentialSeen          = apiwire.CredentialSeen
	CredentialsRequest      = apiwire.CredentialsRequest
	CursorRequest           = apiwire.CursorRequest
	Edit                    = apiwire.Edit
	ExportLine              = apiwire.ExportLine
	ExportPage              = apiwire.ExportPage
	ExportRequest           = apiwire.ExportRequest
	Fact                    = apiwire.Fact
	Gate                    = apiwire.Gate
	GatesRequest            = apiwire.GatesRequest
	HeadRequest             = apiwire.HeadRequest
	HintError               = apiwire.HintError
	LedgerHead              = apiwire.LedgerHead
	LedgerPage[T any]       = apiwire.LedgerPage[T]
	MatchedBy               = apiwire.MatchedBy
	MemoryGetRequest        = apiwire.MemoryGetRequest
	MemoryListRequest       = apiwire.MemoryListRequest
	MessageRequest          = apiwire.MessageRequest
	NoResponderError        = apiwire.NoResponderError
	NodeInfo                = apiwire.NodeInfo
	NodeSummary             = apiwire.NodeSummary
	NodesListRequest        = apiwire.NodesListRequest
	NodesPage[T any]        = apiwire.NodesPage[T]
	Outcome                 = apiwire.Outcome
	OutcomeRecord           = apiwire.OutcomeRecord
	OutcomeRequest          = apiwire.OutcomeRequest
	Page[T any]             = apiwire.Page[T]
	MemorySearchPage[T any] = apiwire.MemorySearchPage[T]
	MemoryFactsRequest      = apiwire.MemoryFactsRequest
	ArtifactsRequest        = apiwire.ArtifactsRequest
	Artifact                = apiwire.Artifact
	MemorySearchRequest     = apiwire.MemorySearchRequest
	Refs                    = apiwire.Refs
	SearchHit               = apiwire.SearchHit
	Pager                   = apiwire.Pager
	PolicyListRequest       = apiwire.PolicyListRequest
	PolicyRequest           = apiwire.PolicyRequest
	PolicyVersion           = apiwire.PolicyVersion
	RemoteError             = apiwire.RemoteError
	Reply                   = apiwire.Reply
	Revocation              = apiwire.Revocation
	Run                     = apiwire.Run
	RunDetail[S any]        = apiwire.RunDetail[S]
	RunSummary              = apiwire.RunSummary
	RunsGetRequest          = apiwire.RunsGetRequest
	RunsListRequest         = apiwire.RunsListRequest
	RunsStepsRequest        = apiwire.RunsStepsRequest
	Step                    = apiwire.Step
	StepEvidence            = apiwire.StepEvidence
	Summary                 = apiwire.Summary
	Verdict                 = apiwire.Verdict
	VerifyResult            = apiwire.VerifyResult
)

const (
	BackupTimeout         = apiwire.BackupTimeout
	CodeAmbiguous         = apiwire.CodeAmbiguous
	CodeBadRequest        = apiwire.CodeBadRequest
	CodeBusy              = apiwire.CodeBusy
	CodeNotFound          = apiwire.CodeNotFound
	CodeTooLarge          = apiwire.CodeTooLarge
	DefaultAlarmsPage     = apiwire.DefaultAlarmsPage
	DefaultGatesPage      = apiwire.DefaultGatesPage
	DefaultMaxPayload     = apiwire.DefaultMaxPayload
	DefaultNodesPage      = apiwire.DefaultNodesPage
	DefaultRunsPage       = apiwire.DefaultRunsPage
	DefaultStepsPage      = apiwire.DefaultStepsPage
	MatchedExact          = apiwire.MatchedExact
	MatchedPrefix         = apiwire.MatchedPrefix
	MatchedSuffix         = apiwire.MatchedSuffix
	MaxAlarmsPage         = apiwire.MaxAlarmsPage
	MaxCommands           = apiwire.MaxCommands
	MaxGatesPage          = apiwire.MaxGatesPage
	MaxListed             = apiwire.MaxListed
	MaxNodesPage          = apiwire.MaxNodesPage
	MaxOutcomeWait        = apiwire.MaxOutcomeWait
	MaxRunsPage           = apiwire.MaxRunsPage
	MaxStepsPage          = apiwire.MaxStepsPage
	MethodAlarmsList      = apiwire.MethodAlarmsList
	MethodAudit           = apiwire.MethodAudit
	MethodCredentialsList = apiwire.MethodCredentialsList
	MethodGatesList       = apiwire.MethodGatesList
	MethodLedgerExport    = apiwire.MethodLedgerExport
	MethodLedgerHead      = apiwire.MethodLedgerHead
	MethodLedgerMessage   = apiwire.MethodLedgerMessage
	MethodLedgerOutcome   = apiwire.MethodLedgerOutcome
	MethodLedgerVerify    = apiwire.MethodLedgerVerify
	MethodMemoryCommands  = apiwire.MethodMemoryCommands
	MethodMemoryFacts     = apiwire.MethodMemoryFacts
	MethodArtifactsList   = apiwire.MethodArtifactsList
	DefaultArtifactsPage  = apiwire.DefaultArtifactsPage
	MaxArtifactsPage      = apiwire.MaxArtifactsPage
	MethodMemorySearch    = apiwire.MethodMemorySearch
	DefaultFactsPage      = apiwire.DefaultFactsPage
	MaxFactsPage          = apiwire.MaxFactsPage
	DefaultSearchPage     = apiwire.DefaultSearchPage
	MaxSearchPage         = apiwire.MaxSearchPage
	MaxQueryLen           = apiwire.MaxQueryLen
	MethodMemoryGet       = apiwire.MethodMemoryGet
	MethodMemoryList      = apiwire.MethodMemoryList
	MethodNodeBackup      = apiwire.MethodNodeBackup
	MethodNodeInfo        = apiwire.MethodNodeInfo
	MethodNodesList       = apiwire.MethodNodesList
	MethodPolicyList      = apiwire.MethodPolicyList
	MethodPolicyShow      = apiwire.MethodPolicyShow
	MethodRevocationsList = apiwire.MethodRevocationsList
	MethodRunsGet         = apiwire.MethodRunsGet
	MethodRunsList        = apiwire.MethodRunsList
	MethodRunsSteps       = apiwire.MethodRunsSteps
	QueueGroup            = apiwire.QueueGroup
	SubjectPrefix         = apiwire.SubjectPrefix
)

var (
	ErrAmbiguous    = apiwire.ErrAmbiguous
	ErrBadRequest   = apiwire.ErrBadRequest
	ErrBusy         = apiwire.ErrBusy
	ErrItemTooLarge = apiwire.ErrItemTooLarge
	ErrNoNode       = apiwire.ErrNoNode
	ErrNotFound     = apiwire.ErrNotFound
	ErrStopped      = apiwire.ErrStopped
	ErrTimeout      = apiwire.ErrTimeout
	ErrTooLarge     = apiwire.ErrTooLarge
	RunStatuses     = apiwire.RunStatuses
)

var (
	AllSubject      = apiwire.AllSubject
	Ambiguous       = apiwire.Ambiguous
	CodeOf          = apiwire.CodeOf
	Done            = apiwire.Done
	HintOf          = apiwire.HintOf
	MatchID         = apiwire.MatchID
	MaxPayload      = apiwire.MaxPayload
	NewPager        = apiwire.NewPager
	NodeSubject     = apiwire.NodeSubject
	PageLimit       = apiwire.PageLimit
	ParseStepCursor = apiwire.ParseStepCursor
	ParseTime       = apiwire.ParseTime
	ResolveID       = apiwire.ResolveID
	StepCursor      = apiwire.StepCursor
	WithHint        = apiwire.WithHint
	WithMaxPayload  = apiwire.WithMaxPayload
)

// Walk yields every item of a listing from cursor on (apiwire.Walk).
func Walk[T any](ctx context.Context, cursor string, fetch func(ctx context.Context, cursor string) (*Page[T], error)) iter.Seq2[T, error] {
	return apiwire.Walk(ctx, cursor, fetch)
}
