// Package peerhttp carries run.Peer over HTTP, for runners on other hosts (`verdict runner`):
// Server answers the internal routes under /api/runner/ by calling the control plane's Peer of
// the runner that asks, and Client is a run.Peer that calls them. The runner's secret
// (VERDICT_RUNNER_SECRET, a bearer token compared in constant time) authenticates every call; a
// claimed run's variables travel only in the answer to /api/runner/next.
//
// The routes (all POST, JSON unless said otherwise):
//
//	/api/runner/next                 {leaseSeconds} → 200 Work, or 204 after up to 25 s with nothing to claim
//	/api/runner/runs/{id}/extend     {leaseSeconds} → 200 {cancelled}
//	/api/runner/runs/{id}/started    {containerId} → 204
//	/api/runner/runs/{id}/log        {seq, offset, chunk} → 204
//	/api/runner/runs/{id}/upload     a tar stream (application/x-tar) → 200 Reports
//	/api/runner/runs/{id}/done       Result → 204
//
// Every request carries `Authorization: Bearer <secret>` and the runner's identity:
// X-Verdict-Runner (its name), X-Verdict-Runner-Slots, X-Verdict-Runner-Backend and
// X-Verdict-Runner-Instance (random for each runner process). A run is bound to the process
// that claimed it: a run this process does not hold (its lease ran out, or another process
// claimed it, even one under the same name and secret) is 409; bad input is 400 with the API's
// error body.
package peerhttp

import (
	"time"

	"verdict/internal/domain"
	"verdict/internal/run"
)

// The runner's identity headers.
const (
	HeaderRunner  = "X-Verdict-Runner"
	HeaderSlots   = "X-Verdict-Runner-Slots"
	HeaderBackend = "X-Verdict-Runner-Backend"
	// HeaderInstance tells one runner process from another of the same name (random, per start;
	// required): the runs a process claims answer to its instance only.
	HeaderInstance = "X-Verdict-Runner-Instance"
	// HeaderBusy is how many runs the runner holds (claimed, not yet done).
	HeaderBusy = "X-Verdict-Runner-Busy"
)

// Prefix is where the routes live.
const Prefix = "/api/runner/"

type leaseBody struct {
	LeaseSeconds int `json:"leaseSeconds"`
}

// nextBody asks for a run. Claim names the request: asked again with the same claim (its
// answer was lost), the server answers with the run it claimed the first time.
type nextBody struct {
	LeaseSeconds int    `json:"leaseSeconds"`
	Claim        string `json:"claim,omitempty"`
}

// cancelsBody lists the runs a runner holds, asking which of them a user cancelled.
type cancelsBody struct {
	Runs []string `json:"runs"`
}

type cancelsAnswer struct {
	Cancelled []string `json:"cancelled"`
}

type extendAnswer struct {
	Cancelled bool `json:"cancelled"`
}

type startedBody struct {
	ContainerID string `json:"containerId"`
}

type logBody struct {
	Seq    int    `json:"seq"`
	Offset int64  `json:"offset"`
	Chunk  string `json:"chunk"`
}

type workJSON struct {
	ID             string         `json:"id"`
	OrganizationID string         `json:"organizationId"`
	TaskID         string         `json:"taskId"`
	Image          string         `json:"image"`
	Command        string         `json:"command,omitempty"`
	BaseURL        string         `json:"baseUrl"`
	Folder         string         `json:"folder"`
	TimeoutSeconds int            `json:"timeoutSeconds"`
	ReportFolders  []string       `json:"reportFolders"`
	Env            run.RunEnv     `json:"env"`
	Shard          *run.ShardWork `json:"shard,omitempty"`
}

func workToJSON(w *run.Work) workJSON {
	return workJSON{ID: w.ID, OrganizationID: w.OrganizationID, TaskID: w.TaskID, Image: w.Image, Command: w.Command,
		BaseURL: w.BaseURL, Folder: w.Folder, TimeoutSeconds: w.TimeoutSeconds, ReportFolders: w.ReportFolders, Env: w.Env,
		Shard: w.Shard}
}

func (j workJSON) work() *run.Work {
	return &run.Work{ID: j.ID, OrganizationID: j.OrganizationID, TaskID: j.TaskID, Image: j.Image, Command: j.Command,
		BaseURL: j.BaseURL, Folder: j.Folder, TimeoutSeconds: j.TimeoutSeconds, ReportFolders: j.ReportFolders, Env: j.Env,
		Shard: j.Shard}
}

type reportsJSON struct {
	Dirs    []string            `json:"dirs"`
	Bytes   int64               `json:"bytes"`
	Indexes []string            `json:"indexes"`
	Notes   []string            `json:"notes"`
	Tests   []domain.TestResult `json:"tests"`
	Summary domain.Summary      `json:"summary"`
}

func reportsToJSON(r run.Reports) reportsJSON {
	return reportsJSON{Dirs: r.Dirs, Bytes: r.Bytes, Indexes: r.Indexes, Notes: r.Notes, Tests: r.Tests, Summary: r.Summary}
}

func (j reportsJSON) reports() run.Reports {
	return run.Reports{Dirs: j.Dirs, Bytes: j.Bytes, Indexes: j.Indexes, Notes: j.Notes, Tests: j.Tests, Summary: j.Summary}
}

type resultJSON struct {
	Status     domain.ExecStatus `json:"status"`
	Error      string            `json:"error,omitempty"`
	ExitCode   *int              `json:"exitCode"`
	FinishedAt time.Time         `json:"finishedAt"`
	Reports    reportsJSON       `json:"reports"`
}

func resultToJSON(r run.Result) resultJSON {
	return resultJSON{Status: r.Status, Error: r.Error, ExitCode: r.ExitCode, FinishedAt: r.FinishedAt, Reports: reportsToJSON(r.Reports)}
}

func (j resultJSON) result() run.Result {
	return run.Result{Status: j.Status, Error: j.Error, ExitCode: j.ExitCode, FinishedAt: j.FinishedAt, Reports: j.Reports.reports()}
}

// errorBody is the API's error body.
type errorBody struct {
	Success bool   `json:"success"`
	Error   string `json:"error"`
	Message string `json:"message"`
}
