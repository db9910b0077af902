// Package analysis is the failure analysis service: it explains failed runs, feeding the built-in analyser
// (internal/ai/analyzer) with what the organization knows — its failure history and people's
// triages — and, when the organization's model is one, asks the model (internal/ai/models)
// with the built-in findings as evidence, falling back to the built-in answer on any failure.
// It is the run plane's post-run Analyst and the service behind the analysis routes and the
// organization's model settings.
package analysis

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"verdict/internal/ai"
	"verdict/internal/ai/analyzer"
	"verdict/internal/ai/models"
	"verdict/internal/crypto/secretbox"
	"verdict/internal/domain"
	"verdict/internal/store"
)

// Models is what the analyst needs of the model providers (*providers.Client).
type Models interface {
	Analyse(ctx context.Context, p models.Provider, model, apiKey string, evidence json.RawMessage) (ai.Finding, error)
	CheckKey(ctx context.Context, p models.Provider, apiKey string) error
}

// Events announces a run analysed again or triaged (the realtime hub).
type Events interface {
	ExecutionUpdated(e *domain.Execution)
}

// Deps are what New needs.
type Deps struct {
	Store store.Store
	// Box seals the organizations' own provider keys.
	Box    *secretbox.Box
	Models Models
	// ServerKeys are the server's provider keys, for organizations without their own.
	ServerKeys map[models.Provider]string
	Events     Events
	Clock      domain.Clock
	Log        *slog.Logger
}

// Service is the analyst.
type Service struct {
	store      store.Store
	box        *secretbox.Box
	models     Models
	serverKeys map[models.Provider]string
	events     Events
	clock      domain.Clock
	log        *slog.Logger

	mu      sync.Mutex
	running map[string]bool // executions being analysed again, by ID
	bg      sync.WaitGroup
}

// New builds the analyst.
func New(d Deps) *Service {
	if d.Clock == nil {
		d.Clock = domain.SystemClock
	}
	if d.Log == nil {
		d.Log = slog.Default()
	}
	return &Service{store: d.Store, box: d.Box, models: d.Models, serverKeys: d.ServerKeys, events: d.Events,
		clock: d.Clock, log: d.Log, running: map[string]bool{}}
}

// Wait waits for the analyses started on request to end (for shutdown and tests).
func (s *Service) Wait() { s.bg.Wait() }

// Bounds of what one analysis reads.
const (
	logTailBytes  = analyzer.MaxLogBytes // the log's end, where the failures are; the analyser reads no more
	historyRuns   = 10                   // earlier runs of the same image, for tests that alternate
	triagesPerRun = analyzer.MaxTriages
	builtinModel  = "builtin"
)

// Analyse explains run, whose outcome is filled in; it implements control.Analyst. The built-in
// analysis always runs; a model, when the organization's default model is one, then gets the
// built-in findings as evidence, and its answer replaces the built-in category and texts. Any
// failure of the model leaves the built-in answer, with the model's error in Error.
func (s *Service) Analyse(ctx context.Context, run *domain.Execution) *domain.Analysis {
	started := s.clock()
	a, res, err := s.builtin(ctx, run)
	if err != nil {
		s.log.Warn("failure analysis could not read the run's context", "org", run.OrganizationID, "task", run.TaskID, "err", err)
		msg := "the analysis could not be made: " + err.Error()
		return &domain.Analysis{Status: domain.AnalysisFailed, Provider: "builtin", Model: builtinModel, Category: string(ai.Unknown),
			Failures: []domain.FailureRef{}, Evidence: []string{}, Error: &msg, CreatedAt: started,
			DurationMs: s.clock().Sub(started).Milliseconds()}
	}
	if err := s.askModel(ctx, run.OrganizationID, a, res); err != nil {
		msg := err.Error()
		a.Error = &msg
	}
	failures := make([]store.FailureOccurrence, len(res.Failures))
	for i, f := range res.Failures {
		failures[i] = store.FailureOccurrence{Signature: f.Signature, Test: f.Test}
	}
	if err := s.store.Analyses().RecordFailures(context.WithoutCancel(ctx), run.OrganizationID, run.ID, run.TaskID,
		run.QueuedAt, failures); err != nil {
		s.log.Warn("recording the run's failure signatures failed", "task", run.TaskID, "err", err)
	}
	if run.Analysis != nil {
		a.Triage = run.Analysis.Triage // a person's word outlives a new analysis
	}
	a.DurationMs = s.clock().Sub(started).Milliseconds()
	return a
}

// builtin runs the built-in analyser on the run with the organization's history and triages.
func (s *Service) builtin(ctx context.Context, run *domain.Execution) (*domain.Analysis, *analyzer.Result, error) {
	log, err := s.logTail(ctx, run.ID)
	if err != nil {
		return nil, nil, err
	}
	in := analyzer.FromExecution(run, log)
	hist, err := s.history(ctx, run, in)
	if err != nil {
		return nil, nil, err
	}
	stored, err := s.store.Analyses().Triages(ctx, run.OrganizationID, triagesPerRun)
	if err != nil {
		return nil, nil, err
	}
	triages := make([]analyzer.Triage, len(stored))
	for i, t := range stored {
		triages[i] = analyzer.Triage{Signature: t.Signature, Normalized: t.Normalized, Category: ai.Category(t.Category),
			By: t.UserName, TaskID: t.TaskID, At: t.CreatedAt}
	}
	res := analyzer.Analyse(in, hist, triages)
	a := &domain.Analysis{Status: domain.AnalysisCompleted, Provider: "builtin", Model: builtinModel,
		Category: string(res.Category), Summary: res.Summary, RootCause: res.RootCause, SuggestedFix: res.SuggestedFix,
		Confidence: res.Confidence, Failures: make([]domain.FailureRef, len(res.Failures)),
		Evidence: make([]string, 0, len(res.Reasons)), CreatedAt: s.clock()}
	for i, f := range res.Failures {
		a.Failures[i] = domain.FailureRef{Test: f.Test, Signature: f.Signature, Occurrences: f.Occurrences,
			FirstSeenTaskID: f.FirstSeenTaskID, Category: string(f.Category), Confidence: f.Confidence, Evidence: f.Reason.Detail}
	}
	for _, c := range res.OtherCategories {
		a.OtherCategories = append(a.OtherCategories, domain.CategoryCount{Category: string(c.Category), Failures: c.Failures})
	}
	for _, r := range res.Reasons {
		a.Evidence = append(a.Evidence, r.Detail)
	}
	return a, &res, nil
}

// logTail reads the end of the run's log.
func (s *Service) logTail(ctx context.Context, executionID string) (string, error) {
	size, err := s.store.Logs().Size(ctx, executionID)
	if err != nil {
		return "", err
	}
	buf := make([]byte, 0, min(size, logTailBytes))
	_, err = s.store.Logs().ReadFrom(ctx, executionID, max(size-logTailBytes, 0), logTailBytes, func(p []byte) error {
		buf = append(buf, p...)
		return nil
	})
	return string(buf), err
}

// history is what the organization's earlier runs say of this run's failures: their
// signatures, and the recent outcomes of its failed tests in runs of the same image.
func (s *Service) history(ctx context.Context, run *domain.Execution, in analyzer.Input) (analyzer.History, error) {
	h := analyzer.History{Signatures: map[string]analyzer.SignatureHistory{}, Tests: map[string][]domain.TestStatus{}}
	sigs := analyzer.Signatures(in)
	if len(sigs) == 0 {
		return h, nil
	}
	past, err := s.store.Analyses().History(ctx, run.OrganizationID, run.ID, sigs)
	if err != nil {
		return h, err
	}
	for sig, p := range past {
		h.Signatures[sig] = analyzer.SignatureHistory{Occurrences: p.Failures, FirstSeenTaskID: p.FirstTaskID}
	}
	earlier, err := s.store.Executions().ListFinishedForImage(ctx, run.OrganizationID, run.Image, historyRuns+1)
	if err != nil {
		return h, err
	}
	wanted := map[string]bool{}
	for _, k := range analyzer.TestKeys(in) {
		wanted[k] = true
	}
	for i := len(earlier) - 1; i >= 0; i-- { // oldest first
		e := &earlier[i]
		if e.ID == run.ID {
			continue
		}
		for _, t := range e.Tests {
			if k := analyzer.TestKey(t.Suite, t.Name); wanted[k] {
				h.Tests[k] = append(h.Tests[k], t.Status)
			}
		}
	}
	return h, nil
}

// askModel asks the organization's model, if it has one, and takes its answer into a. The
// error says why the built-in answer stands.
func (s *Service) askModel(ctx context.Context, orgID string, a *domain.Analysis, res *analyzer.Result) error {
	m, err := s.ModelFor(ctx, orgID)
	if err != nil {
		return errors.New("the organization's model could not be read; the built-in analysis is shown")
	}
	if m.Provider == "" {
		if m.Missing != "" {
			return errors.New(m.Missing)
		}
		return nil
	}
	evidence, err := json.Marshal(res.Evidence)
	if err != nil {
		return err
	}
	f, err := s.models.Analyse(ctx, m.Provider, m.Model, m.Key, evidence)
	if err != nil {
		s.log.Warn("the model failed; the built-in analysis stands", "org", orgID, "model", m.Name, "err", err)
		return errors.New("the model " + m.Name + " failed (" + err.Error() + "); the built-in analysis is shown")
	}
	if why := unsupported(f.Category, res); why != "" {
		s.log.Warn("the model's category contradicts the evidence; the built-in analysis stands", "org", orgID, "model", m.Name, "category", f.Category)
		return errors.New("the model " + m.Name + " answered " + string(f.Category) + ", which " + why + "; the built-in analysis is shown")
	}
	a.Provider, a.Model = string(m.Provider), m.Model
	a.Category, a.Summary, a.RootCause, a.SuggestedFix, a.Confidence = string(f.Category), f.Summary, f.RootCause,
		f.SuggestedFix, f.Confidence
	return nil
}

// minOverrulingConfidence is how sure the built-in category must be (its rules' measured
// precision) for a model's contradiction of it to be refused.
const minOverrulingConfidence = 0.8

// unsupported checks a model's category against the built-in analysis and its evidence: a
// category no failure of the run shows, against a built-in category this sure, is refused (the
// reason returned); anything else the model may decide.
func unsupported(c ai.Category, res *analyzer.Result) string {
	if c == res.Category || res.Category == ai.Unknown || res.Confidence < minOverrulingConfidence {
		return ""
	}
	for _, f := range res.Failures {
		if f.Category == c {
			return ""
		}
	}
	return fmt.Sprintf("no failed test's evidence shows, against the built-in %s at confidence %.2f", res.Category, res.Confidence)
}
