package analysis

import (
	"context"
	"errors"
	"strings"
	"time"

	"verdict/internal/ai"
	"verdict/internal/ai/analyzer"
	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// requestTimeout bounds an analysis made on request, like the post-run one.
const requestTimeout = 90 * time.Second

var (
	errInProgress  = domain.Conflict("Execution in progress", "The run has not finished; it is analysed when it does")
	errNotAnalysed = domain.BadRequest("Nothing to analyse", "Only FAILED and UNSTABLE runs are analysed")
)

// analysable finds the organization's run taskID for an analysis request: it must have ended
// FAILED or UNSTABLE.
func (s *Service) analysable(ctx context.Context, p *identity.Principal, taskID string) (*domain.Execution, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	if !domain.ValidTaskID(taskID) {
		return nil, errNotFound
	}
	e, err := s.store.Executions().Get(ctx, p.OrgID, taskID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNotFound
	}
	if err != nil {
		return nil, err
	}
	switch {
	case !e.Status.Final():
		return nil, errInProgress
	case e.Status != domain.ExecFailed && e.Status != domain.ExecUnstable:
		return nil, errNotAnalysed
	}
	return e, nil
}

// Reanalyse analyses a finished FAILED or UNSTABLE run again, in the background (admins and
// developers): the new analysis replaces the old and is announced as execution-updated. A run
// already being analysed again is not analysed twice at once.
func (s *Service) Reanalyse(ctx context.Context, p *identity.Principal, taskID string) error {
	e, err := s.analysable(ctx, p, taskID)
	if err != nil {
		return err
	}
	s.mu.Lock()
	busy := s.running[e.ID]
	s.running[e.ID] = true
	s.mu.Unlock()
	if busy {
		return nil
	}
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer func() { s.mu.Lock(); delete(s.running, e.ID); s.mu.Unlock() }()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
		defer cancel()
		a := s.Analyse(actx, e)
		if err := s.store.Executions().SetAnalysis(actx, e.OrganizationID, e.ID, a); err != nil {
			s.log.Warn("storing an analysis made on request failed (the run may have been deleted)", "task", e.TaskID, "err", err)
			return
		}
		s.announce(actx, e.ID)
	}()
	return nil
}

// Triage records a person's category for a FAILED or UNSTABLE run (admins and developers): it
// shows on the run's analysis, and the built-in analyser gives it to later failures with the
// same or a similar signature. A run without an analysis gets the built-in one with it.
func (s *Service) Triage(ctx context.Context, p *identity.Principal, taskID, category string) (*domain.Execution, error) {
	if !p.CanWrite() {
		return nil, errReadOnly
	}
	c := ai.Category(strings.TrimSpace(category))
	if !c.Valid() {
		names := make([]string, len(ai.Categories))
		for i, k := range ai.Categories {
			names[i] = string(k)
		}
		return nil, validation("category must be one of %s", strings.Join(names, ", "))
	}
	e, err := s.analysable(ctx, p, taskID)
	if err != nil {
		return nil, err
	}
	now := s.clock()
	by := p.User.Name
	if by == "" {
		by = p.User.Email
	}
	res := analyzer.Analyse(analyzer.FromExecution(e, ""), analyzer.History{}, nil)
	triages := make([]domain.Triage, 0, len(res.Failures))
	seen := map[string]bool{}
	for _, f := range res.Failures {
		if seen[f.Signature] {
			continue
		}
		seen[f.Signature] = true
		triages = append(triages, domain.Triage{OrganizationID: e.OrganizationID, ExecutionID: e.ID, TaskID: e.TaskID,
			Signature: f.Signature, Normalized: f.Normalized, Category: string(c), UserID: p.UserID, UserName: by,
			CreatedAt: now})
	}
	if err := s.store.Analyses().AddTriages(ctx, triages); err != nil {
		return nil, err
	}
	a := e.Analysis
	if a == nil {
		a = s.Analyse(ctx, e)
	}
	a.Triage = &domain.TriageRef{Category: string(c), By: by, At: now}
	if err := s.store.Executions().SetAnalysis(ctx, e.OrganizationID, e.ID, a); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, errNotFound // deleted meanwhile
		}
		return nil, err
	}
	e.Analysis = a
	s.announce(ctx, e.ID)
	return e, nil
}

func (s *Service) announce(ctx context.Context, executionID string) {
	if s.events == nil {
		return
	}
	if e, err := s.store.Executions().GetByID(ctx, executionID); err == nil {
		s.events.ExecutionUpdated(e)
	}
}
