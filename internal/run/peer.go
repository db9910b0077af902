package run

import (
	"context"
	"errors"
	"io"
	"time"

	"verdict/internal/domain"
)

// Peer is the control plane as a runner sees it: the one door between a runner and the store,
// the billing, the secrets and the report storage. Woodpecker's rpc.Peer is the model. Every
// call takes a context and carries IDs and plain data only, so that the same interface can be
// served in process (control.Plane) or over HTTP to a runner on another host. A Peer speaks for
// one runner: the runs it hands out are leased to that runner, and only its calls about them
// count.
type Peer interface {
	// Next claims the oldest PENDING run this runner may take (its organization's concurrent
	// runs allowing), leased for lease, with its variables unsealed for it alone. nil, nil: no
	// run is waiting.
	Next(ctx context.Context, lease time.Duration) (*Work, error)
	// Extend renews the lease on run id for lease more. cancelled: a user asked to cancel the
	// run (the runner winds it down and goes on extending until Done). ErrLeaseLost: this runner
	// no longer holds the run.
	Extend(ctx context.Context, id string, lease time.Duration) (cancelled bool, err error)
	// Started records the container that carries out run id, for the control plane to remove
	// should the runner be lost.
	Started(ctx context.Context, id, containerID string) error
	// Log appends chunk, whole lines with secrets masked, to run id's log: the seq-th chunk
	// (from 1), starting offset bytes into the log. The control plane announces it to the
	// run's followers before storing it.
	Log(ctx context.Context, id string, seq int, offset int64, chunk string) error
	// Upload stores run id's reports from archive, a tar stream of the run's report folders as
	// they sit under /app (entries named by their path under /app: junit/results.xml), within
	// the organization's storage, and reads the test results they hold. One archive per run;
	// Upload reads it to its end unless the reports are refused (Reports.Notes says why).
	Upload(ctx context.Context, id string, archive io.Reader) (Reports, error)
	// Done ends run id with result: the post-run chain (analysis, the final write, storage
	// accounting, the announcement). It returns once the run is settled; the runner keeps the
	// lease meanwhile.
	Done(ctx context.Context, id string, result Result) error
}

// RemotePeer is the Peer a runner on another host reaches over HTTP, where an answer can be
// lost on the way (the connection breaks, the replica that gave it dies).
type RemotePeer interface {
	Peer
	// NextClaim is Next for one ask of the runner, named by claim, a random key the runner
	// picks for it. The claim is stored with the run it claims, so that any replica answers
	// the ask repeated (Claimed).
	NextClaim(ctx context.Context, lease time.Duration, claim string) (*Work, error)
	// Claimed is the run the ask claim claimed already, while the runner's process holds it
	// (the ask is repeated: its answer was lost); nil, nil: none, so the ask claims anew.
	Claimed(ctx context.Context, claim string) (*Work, error)
}

// ErrLeaseLost: the runner no longer holds the run (the reaper ended it, or another runner
// took it over).
var ErrLeaseLost = errors.New("lease lost")

// Work is a claimed run as a runner needs it.
type Work struct {
	ID             string
	OrganizationID string
	TaskID         string
	Image          string
	Command        string // replaces the image's entrypoint when set; checked at queue time
	BaseURL        string
	Folder         string
	TimeoutSeconds int
	ReportFolders  []string // under /app; empty: domain.DefaultReportFolders
	Env            RunEnv   // the run's variables, unsealed
	// Shard is the container's part of a sharded run; nil for a run of one container.
	Shard *ShardWork
}

// ShardWork is one container's part of a sharded run (see the container contract in
// docs/suites.md): its place among the run's containers and the tests it runs.
type ShardWork struct {
	RunTaskID string `json:"runTaskId"` // the run's taskId (TASK_ID); Work.TaskID is the shard's own
	Index     int    `json:"index"`     // SHARD_INDEX, from 1
	Total     int    `json:"total"`     // SHARD_TOTAL
	Retry     bool   `json:"retry"`     // a retry container of the failed tests (VERDICT_RETRY=1)
	// Tests are the tests or test files to run, one per line of TestsFile; nil: none assigned.
	Tests []string `json:"tests"`
	// AllTests are those assigned to all the run's shards (AllTestsFile), so that a suite can
	// spread the tests it has that are in no list (new ones) by SHARD_INDEX; nil: none.
	AllTests []string `json:"allTests"`
}

// Where a container finds its lists of tests (the container contract).
const (
	TestsFile    = "/verdict/tests.txt"
	AllTestsFile = "/verdict/all-tests.txt"
)

// Reports is what Upload kept of a run's reports and read in them.
type Reports struct {
	Dirs    []string // the report folders kept, in the order listed
	Bytes   int64    // their size, counted against the organization's storage
	Indexes []string // those of Dirs holding an index.html
	Notes   []string // what was left out, and why
	Tests   []domain.TestResult
	Summary domain.Summary
}

// Result is how a run ended, as the runner saw it.
type Result struct {
	Status     domain.ExecStatus
	Error      string
	ExitCode   *int // nil when the container did not exit by itself
	FinishedAt time.Time
	Reports    Reports
}
