package history

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
	"verdict/internal/store"
)

// A project's quality gate judges each of its finished runs against its rules and its baseline
// (the run it is compared with): the judgement is stored on the run and shown with it, and never
// changes the run's status.

var errGateReadOnly = domain.Forbidden("Forbidden", "Viewers cannot change a project's gate rules")

// BaselineStatuses are the statuses a run's baseline may have: runs whose tests ran to a verdict.
// A run that ended in ERROR or was CANCELLED (its tests did not all run) is never one.
var BaselineStatuses = []domain.ExecStatus{domain.ExecPassed, domain.ExecFailed, domain.ExecUnstable}

// GateRules returns the rules of the organization's project (none: an empty set, every rule
// off). Every member may read them.
func (s *Service) GateRules(ctx context.Context, p *identity.Principal, projectID string) (*domain.GateRules, error) {
	r, err := s.store.Projects().GateRules(ctx, p.OrgID, projectID)
	if err != nil {
		return nil, notFound(err, errProject404)
	}
	return normalRules(r), nil
}

// SetGateRules replaces the rules of the organization's project with r (admins and
// developers); audit-logged. Runs that ended before keep their gate; the next runs are judged
// by the new rules.
func (s *Service) SetGateRules(ctx context.Context, p *identity.Principal, projectID string, r domain.GateRules) (*domain.GateRules, error) {
	if !p.CanWrite() {
		return nil, errGateReadOnly
	}
	if err := domain.ValidateGateRules(&r); err != nil {
		return nil, err
	}
	stored := normalRules(&r)
	if !stored.Judges() && len(stored.BaselineLabels) == 0 {
		stored = nil // nothing set: the project has no rules
	}
	err := s.store.InTx(ctx, func(tx store.Store) error {
		if err := tx.Projects().SetGateRules(ctx, p.OrgID, projectID, stored); err != nil {
			return notFound(err, errProject404)
		}
		return tx.Audit().Append(ctx, &domain.AuditEntry{ID: s.newID(), OrganizationID: p.OrgID, ActorID: p.UserID,
			Action: "project.gate_updated", TargetType: "project", TargetID: projectID,
			Details: map[string]any{"rules": normalRules(stored)}, CreatedAt: s.clock()})
	})
	if err != nil {
		return nil, err
	}
	return normalRules(stored), nil
}

// normalRules is a copy of r (nil: none) with its baseline labels never nil.
func normalRules(r *domain.GateRules) *domain.GateRules {
	var out domain.GateRules
	if r != nil {
		out = *r
	}
	if out.BaselineLabels == nil {
		out.BaselineLabels = map[string]string{}
	}
	return &out
}

// judge evaluates the quality gate of the project of run, a finished run whose tests st has
// just recorded (in the same transaction), and stores it on the run: nil when the project has
// no rule to check (or is gone).
func (s *Service) judge(ctx context.Context, st store.Store, run *domain.Execution) error {
	rules, err := st.Projects().GateRules(ctx, run.OrganizationID, run.ProjectID)
	if errors.Is(err, store.ErrNotFound) {
		rules, err = nil, nil
	}
	if err != nil {
		return err
	}
	if !rules.Judges() {
		if run.Gate == nil {
			return nil
		}
		return st.Executions().SetGate(ctx, run.OrganizationID, run.ID, nil)
	}
	base, err := s.baseline(ctx, st, run, rules)
	if err != nil {
		return err
	}
	c, err := s.compare(ctx, st, run, base, false)
	if err != nil {
		return err
	}
	return st.Executions().SetGate(ctx, run.OrganizationID, run.ID, Judge(rules, c, s.clock()))
}

// baseline is run's baseline under rules (nil: the default choice): the newest run of its
// project (of its image, for a run without one) in a BaselineStatuses status, finished before
// it, carrying rules.Baseline's labels; nil when none is.
func (s *Service) baseline(ctx context.Context, st store.Store, run *domain.Execution, rules *domain.GateRules) (*domain.Execution, error) {
	if run.FinishedAt == nil {
		return nil, nil
	}
	return st.Executions().Baseline(ctx, run.OrganizationID, store.BaselineQuery{ProjectID: run.ProjectID,
		Image: run.Image, Labels: rules.Baseline(run.Labels), Statuses: BaselineStatuses,
		Before: *run.FinishedAt, BeforeID: run.ID})
}

// namesShown is how many tests a rule's message names.
const namesShown = 3

// Judge is the gate of rules over the run and baseline of c (c.Base nil: none) at now. Each
// rule that is on gives one GateRule, in the order of domain's Rule names; the gate fails when
// one of them does.
func Judge(rules *domain.GateRules, c *Comparison, now time.Time) *domain.Gate {
	run := c.Run
	s := run.Summary
	g := &domain.Gate{Status: domain.GatePassed, Rules: []domain.GateRule{}, EvaluatedAt: now}
	if c.Base != nil {
		g.BaselineTaskID = c.Base.TaskID
	}
	add := func(rule string, passed bool, actual, threshold float64, msg string) {
		g.Rules = append(g.Rules, domain.GateRule{Rule: rule, Passed: passed, Actual: actual, Threshold: threshold, Message: msg})
		if !passed {
			g.Status = domain.GateFailed
		}
	}
	if r := rules.MinTests; r != nil {
		if s.Total >= *r {
			add(domain.RuleMinTests, true, float64(s.Total), float64(*r), fmt.Sprintf("%s, at least %d required", plural(s.Total, "test"), *r))
		} else {
			add(domain.RuleMinTests, false, float64(s.Total), float64(*r),
				fmt.Sprintf("incomplete run: %s, fewer than the %d required", plural(s.Total, "test"), *r))
		}
	}
	if r := rules.MaxFailed; r != nil {
		q := len(run.QuarantinedFailures)
		failed := max(s.Failed-q, 0)
		msg := fmt.Sprintf("%s, at most %d allowed", plural(failed, "failed test"), *r)
		if q > 0 {
			msg = fmt.Sprintf("%s (%s not counted)", msg, plural(q, "quarantined failure"))
		}
		add(domain.RuleMaxFailed, failed <= *r, float64(failed), float64(*r), msg)
	}
	if r := rules.MinPassRate; r != nil {
		ran, passed := s.Total-s.Skipped, s.Passed+s.Flaky
		if ran <= 0 {
			add(domain.RuleMinPassRate, false, 0, *r, fmt.Sprintf("no test ran (skipped tests aside), at least %s required", percent(*r)))
		} else {
			rate := float64(passed) / float64(ran)
			add(domain.RuleMinPassRate, rate >= *r, rate, *r,
				fmt.Sprintf("pass rate %s (%d of %d tests run passed), at least %s required", percent(rate), passed, ran, percent(*r)))
		}
	}
	if r := rules.NoNewFailures; r != nil && *r {
		quarantined := map[string]bool{}
		for _, q := range run.QuarantinedFailures {
			quarantined[testKey(q.Suite, q.Name)] = true
		}
		var news []TestDiff
		for _, d := range c.NewFailures {
			if !quarantined[testKey(d.Suite, d.Name)] {
				news = append(news, d)
			}
		}
		switch {
		case c.Base == nil:
			add(domain.RuleNoNewFailures, true, 0, 0, "no baseline run to compare with")
		case len(news) == 0:
			add(domain.RuleNoNewFailures, true, 0, 0, "no new failures against "+c.Base.TaskID)
		default:
			add(domain.RuleNoNewFailures, false, float64(len(news)), 0,
				fmt.Sprintf("%s against %s: %s", plural(len(news), "new failure"), c.Base.TaskID, names(news)))
		}
	}
	if r := rules.NoNewFlaky; r != nil && *r {
		switch {
		case c.Base == nil:
			add(domain.RuleNoNewFlaky, true, 0, 0, "no baseline run to compare with")
		case len(c.NewlyFlaky) == 0:
			add(domain.RuleNoNewFlaky, true, 0, 0, "no newly flaky tests against "+c.Base.TaskID)
		default:
			add(domain.RuleNoNewFlaky, false, float64(len(c.NewlyFlaky)), 0,
				fmt.Sprintf("%s against %s: %s", plural(len(c.NewlyFlaky), "newly flaky test"), c.Base.TaskID, names(c.NewlyFlaky)))
		}
	}
	if r := rules.MaxDurationSeconds; r != nil {
		secs := float64(run.DurationMs(now)) / 1000
		add(domain.RuleMaxDurationSeconds, secs <= float64(*r), secs, float64(*r),
			fmt.Sprintf("ran %s, at most %d s allowed", seconds(secs), *r))
	}
	return g
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func percent(f float64) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.2f", f*100), "0"), ".0") + "%"
}

func seconds(f float64) string {
	return strings.TrimSuffix(strings.TrimSuffix(fmt.Sprintf("%.1f", f), "0"), ".") + " s"
}

// names names the first namesShown tests of list, "suite › name", and counts the others.
func names(list []TestDiff) string {
	var parts []string
	for i, d := range list {
		if i == namesShown {
			parts = append(parts, fmt.Sprintf("and %d more", len(list)-namesShown))
			break
		}
		n := d.Name
		if d.Suite != "" {
			n = d.Suite + " › " + d.Name
		}
		parts = append(parts, n)
	}
	return strings.Join(parts, ", ")
}
