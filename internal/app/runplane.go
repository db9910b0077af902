package app

import (
	"context"

	"verdict/internal/ai/models"
	"verdict/internal/ai/providers"
	"verdict/internal/analysis"
	"verdict/internal/control"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/peerhttp"
	"verdict/internal/run"
	"verdict/internal/run/engines"
	"verdict/internal/scm"
)

// runPlane opens the run backend and builds the control plane (control.Plane, with the analyst
// of failed runs), the runner routes (peerhttp.Server, mounted at /api/runner/), the embedded
// runner, the executions service that wakes them, and the lease reaper.
func (w *wiring) runPlane(context.Context) error {
	cfg, o, st, clock, log, a := w.cfg, w.o, w.st, w.clock, w.log, w.a
	box, reports, reportStore, events, alerts := w.box, w.reports, w.reportStore, w.events, w.alerts
	res := engines.Resources(cfg.Runs.Engine)
	// The run backend is the embedded runner's alone: a server that runs no suites opens none
	// (its remote runners have their own), and reads no image (tests-structure answers 503).
	var backend run.Backend
	if cfg.Runs.Runner == "embedded" {
		var err error
		if backend, err = engines.Open(cfg.Runs.Engine, log); err != nil {
			return err
		}
		a.closers = append(a.closers, func() { engines.Close(backend) })
	}
	a.backend = backend
	execDeps := executions.Deps{Store: st, Box: box, Backend: backend, Reports: reports, Events: cancelCounter{events, a.metrics},
		Alerts: alerts, Clock: clock, NewID: domain.NewID, Log: log, DefaultImage: cfg.Runs.DefaultImage, DefaultBaseURL: cfg.Runs.DefaultBaseURL,
		AllowedImages: cfg.Runs.AllowedImages, PlanTimeouts: planTimeouts(cfg.Runs.PlanTimeouts),
		MaxShards: planShards(cfg.Runs.PlanShards)}
	if err := w.analyst(); err != nil {
		return err
	}
	// The outages of the database the runners' calls meet reach the lease reaper, which does not
	// count them against the runners' leases.
	outages := &control.Outages{}
	if err := w.sourceControl(); err != nil {
		return err
	}
	execDeps.Queued = w.scm.Queued
	// The post-run steps, in order, one line each (control.Step); their deliveries go through
	// the outbox, which the mail worker empties.
	notifications, err := w.notifications()
	if err != nil {
		return err
	}
	a.steps = []control.Step{
		control.Announce{Events: events},
		w.scm.Step(),
		notifications,
	}
	a.mailer.Deliverers = control.Deliveries(a.steps)
	a.histories = history.New(history.Deps{Store: st, Clock: clock, Log: log})
	plane := &control.Plane{Steps: a.steps, Histories: a.histories, Store: st, Reports: reports, ReportDir: reportStore.dir, ReportFS: reportStore.fsys, Box: box, Events: events,
		Clock: clock, Log: log, Alerts: alerts, Analyst: w.analyses, Metrics: a.metrics, Outages: outages}
	lease := cfg.Runs.RunnerLease
	if o.Lease > 0 {
		lease = o.Lease
	}
	// Remote runners (`verdict runner`) reach the same plane over HTTP, each through its own
	// run.Peer; a queued run wakes their waiting /api/runner/next.
	remoteDeps := peerhttp.ServerDeps{Secret: cfg.Runs.RunnerSecret, Peer: plane.InstancePeer, Clock: clock, Log: log,
		Cancelled: plane.Cancelled}
	if a.redis != nil {
		remoteDeps.Registry = redisRunners{client: a.redis, key: w.redisPrefix() + "runners"}
	}
	a.remote = peerhttp.NewServer(remoteDeps)
	execDeps.Wake = a.remote.Notify
	execDeps.Stop = func(string) { a.remote.NotifyCancel() }
	if cfg.Runs.Runner == "embedded" {
		// The embedded runner reaches the control plane in process, through its run.Peer.
		id := runnerID(cfg.Server.DataDir)
		a.runner = &run.Runner{ID: id, Peer: plane.Peer(id), Backend: backend, Clock: clock, Log: log,
			Slots: cfg.Runs.RunnerSlots, Resources: res, Lease: lease}
		remote := a.remote
		execDeps.Wake = func() { a.runner.Notify(); remote.Notify() }
		execDeps.Stop = func(id string) { a.runner.Cancel(id); remote.NotifyCancel() }
	}
	// A run queued for a commit has its pending status in the outbox: the mail worker looks at
	// once rather than at its next poll, so the status is set before the run is likely to end
	// (a burst of runs wakes it once: Notify never blocks and coalesces).
	wake := execDeps.Wake
	execDeps.Wake = func() { wake(); a.mailer.Notify() }
	w.execs = executions.New(execDeps)
	// The reaper removes a lost run's container only through the backend of the runner that ran
	// it, when that runner is this process's; a remote runner removes its own.
	var own map[string]run.Backend
	if a.runner != nil {
		own = map[string]run.Backend{a.runner.ID: backend}
	}
	a.reaper = &control.Reaper{Store: st, Backends: own, Steps: a.steps, Clock: clock, Log: log, Interval: o.ReapInterval,
		Metrics: a.metrics, Grace: lease, Outages: outages, ShardEnded: plane.ShardEnded}
	return nil
}

// analyst builds the model providers' client and the analyst of failed runs, which the control
// plane asks and the analysis routes and the planner use.
func (w *wiring) analyst() error {
	cfg, st, clock, log, a := w.cfg, w.st, w.clock, w.log, w.a
	// Organizations' own model keys are sealed with a key of their own, derived like the mail's.
	keysBox, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict provider keys"))
	if err != nil {
		return err
	}
	modelClient := providers.New(modelsConfig(cfg.AI))
	w.modelClient = modelClient
	analyses := analysis.New(analysis.Deps{Store: st, Box: keysBox, Models: modelClient,
		ServerKeys: map[models.Provider]string{models.OpenAI: cfg.AI.OpenAIAPIKey, models.Gemini: cfg.AI.GeminiAPIKey,
			models.Anthropic: cfg.AI.AnthropicAPIKey},
		Events: w.events, Clock: clock, Log: log})
	a.closers = append(a.closers, analyses.Wait) // runs before the store closes
	w.analyses = analyses
	return nil
}

// sourceControl builds the source-control service: the hosts' tokens, projects' hooks, and the
// step that reports runs to their commits. Three of its needs come later and are bound late,
// each used only once requests are served or the outbox is delivered: the executions service
// its hooks queue runs through and the tests' histories its comments compare runs with (both
// built by runPlane after the steps the control plane takes), and the report links (built by
// services).
func (w *wiring) sourceControl() error {
	cfg := w.cfg
	// Organizations' source-control tokens and hooks' secrets are sealed with a key of their
	// own, derived like the others.
	box, err := secretbox.New(deriveKey(string(cfg.Secrets.EncryptionKey), "verdict source control keys"))
	if err != nil {
		return err
	}
	w.scm = scm.New(scm.Deps{Store: w.st, Box: box, Egress: w.egress, Runs: lateRuns{w}, PublicURL: cfg.Server.PublicURL,
		ReportURL: func(ctx context.Context, e *domain.Execution) string { return w.reportURL(ctx, e) },
		Compare: func(ctx context.Context, p *identity.Principal, taskID, with string) (*history.Comparison, error) {
			return w.a.histories.Compare(ctx, p, taskID, with)
		},
		Clock: w.clock, Log: w.log})
	return nil
}

// lateRuns queues the hooks' runs through the executions service, which runPlane builds after
// the source-control service.
type lateRuns struct{ w *wiring }

func (l lateRuns) Queue(ctx context.Context, p *identity.Principal, in executions.QueueInput) (*domain.Execution, error) {
	return l.w.execs.Queue(ctx, p, in)
}
