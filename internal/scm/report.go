package scm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"verdict/internal/control"
	"verdict/internal/domain"
	"verdict/internal/history"
	"verdict/internal/identity"
	"verdict/internal/integrations"
	"verdict/internal/scm/host"
	"verdict/internal/store"
)

// A run labelled with a commit (domain.CommitLabel) and a repository (domain.RepoLabel, or its
// project's repository) reports to that commit on the host its trigger label names, or else the
// host the organization has a token for (GitHub first): a pending status when it is queued,
// then its verdict when it ends, and, for a pull or merge request (domain.PRLabel), one comment
// on the request kept up to date. Both go through the durable outbox, so neither a run's
// queueing nor its end waits on the host, and a host that is away is retried.

// stepName names the post-run step and its deliveries in the outbox.
const stepName = "source-control"

// Phases of a run a delivery reports.
const (
	phaseQueued = "queued"
	phaseEnded  = "ended"
)

// payload is what a delivery carries: which run, and which phase of it. The run is read again
// when the delivery is made, so a queued status delivered after the run ended sets nothing.
type payload struct {
	Run   string `json:"run"` // the execution's ID
	Phase string `json:"phase"`
}

// wantsReport reports whether a run names a commit: the only runs that report.
func wantsReport(e *domain.Execution) bool { return e.Labels[domain.CommitLabel] != "" }

// Queued enqueues the pending status of a run just queued, in tx, the transaction that stores it
// (executions.Deps.Queued). A run that names no commit costs nothing more.
func (s *Service) Queued(ctx context.Context, tx store.Store, e *domain.Execution) error {
	if !wantsReport(e) {
		return nil
	}
	if _, _, ok, err := s.target(ctx, tx, e); err != nil || !ok {
		return err
	}
	b, err := json.Marshal(payload{Run: e.ID, Phase: phaseQueued})
	if err != nil {
		return err
	}
	kind, now := control.DeliveryKind(stepName), s.clock()
	err = tx.Outbox().Enqueue(ctx, &store.Mail{Kind: kind, Key: kind + ":" + phaseQueued + ":" + e.ID, To: []string{},
		Text: string(b), NextAttempt: now, CreatedAt: now})
	if errors.Is(err, store.ErrConflict) {
		return nil
	}
	return err
}

// target is where run e reports: the host's name and the repository; ok false when it names no
// commit or repository, or the organization has no token for the host.
func (s *Service) target(ctx context.Context, st store.Store, e *domain.Execution) (provider, repo string, ok bool, err error) {
	if !wantsReport(e) {
		return "", "", false, nil
	}
	repo = e.Labels[domain.RepoLabel]
	if repo == "" && e.ProjectID != "" {
		proj, err := st.Projects().Get(ctx, e.OrganizationID, e.ProjectID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", "", false, err
		}
		if proj != nil {
			repo = proj.Repository
		}
	}
	if repo == "" {
		return "", "", false, nil
	}
	candidates := domain.SCMProviders
	if t := e.Labels[domain.TriggerLabel]; domain.ValidSCMProvider(t) {
		candidates = []string{t}
	}
	for _, c := range candidates {
		_, err := st.Integrations().Get(ctx, e.OrganizationID, c)
		if err == nil {
			return c, repo, true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return "", "", false, err
		}
	}
	return "", "", false, nil
}

// Step is the post-run step that reports a run's end to its commit.
func (s *Service) Step() control.Step { return step{s} }

type step struct{ s *Service }

func (step) Name() string { return stepName }

// After enqueues the run's end for Deliver when it names a commit; where it goes is decided
// when the delivery is made.
func (st step) After(ctx context.Context, run *domain.Execution, out control.Outbox) error {
	if !wantsReport(run) {
		return nil
	}
	b, err := json.Marshal(payload{Run: run.ID, Phase: phaseEnded})
	if err != nil {
		return err
	}
	return out.Enqueue(ctx, run.ID, string(b))
}

func (st step) Deliver(ctx context.Context, raw string) error { return st.s.deliver(ctx, raw) }

// deliver makes one delivery: the commit status of the run's phase and, at its end, the
// request's comment. A refusal that would repeat (a refused token, a repository or commit the
// host does not have, a request it calls invalid) is logged and not retried; anything else is
// retried by the outbox.
func (s *Service) deliver(ctx context.Context, raw string) error {
	var p payload
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		s.log.Error("a source-control delivery is not readable; dropped", "err", err)
		return nil
	}
	e, err := s.store.Executions().GetByID(ctx, p.Run)
	if errors.Is(err, store.ErrNotFound) {
		return nil // deleted meanwhile
	}
	if err != nil {
		return err
	}
	if p.Phase == phaseQueued && e.Status.Final() {
		return nil // its end's delivery sets the status
	}
	provider, repo, ok, err := s.target(ctx, s.store, e)
	if err != nil || !ok {
		return err
	}
	token, apiURL, ok, err := s.token(ctx, s.store, e.OrganizationID, provider)
	if err != nil || !ok {
		return err
	}
	var proj *domain.Project
	if e.ProjectID != "" {
		if proj, err = s.store.Projects().Get(ctx, e.OrganizationID, e.ProjectID); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
	}
	h := s.open(provider, apiURL)
	sha := e.Labels[domain.CommitLabel]
	if err := h.SetStatus(ctx, token, repo, sha, s.status(e, proj, p.Phase)); err != nil {
		return s.failed(e, provider, "commit status", err)
	}
	request, _ := strconv.ParseInt(e.Labels[domain.PRLabel], 10, 64)
	if p.Phase != phaseEnded || request <= 0 || proj == nil {
		return nil
	}
	sc := s.store.SourceControl()
	known, err := sc.Comment(ctx, e.OrganizationID, proj.ID, provider, repo, request)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	id, err := h.Comment(ctx, token, repo, request, known, marker(proj), s.comment(ctx, e, proj))
	if err != nil {
		return s.failed(e, provider, "request comment", err)
	}
	if id != known {
		return sc.PutComment(ctx, e.OrganizationID, proj.ID, provider, repo, request, id, s.clock())
	}
	return nil
}

// failed is a delivery's outcome after a host refused a call: nil (logged) when trying again
// would fail the same way, else err for the outbox to retry.
func (s *Service) failed(e *domain.Execution, provider, what string, err error) error {
	if host.Permanent(err) {
		s.log.Warn("a source-control host refused a run's report; not retried", "provider", provider, "what", what,
			"task", e.TaskID, "org", e.OrganizationID, "err", err)
		return nil
	}
	return err
}

// runLink is the run's page.
func (s *Service) runLink(e *domain.Execution) string {
	return s.publicURL + "/runs/" + url.PathEscape(e.TaskID)
}

// statusContext names Verdict's status of the project's runs on a commit.
func statusContext(proj *domain.Project) string {
	if proj == nil {
		return "verdict"
	}
	return "verdict/" + proj.Name
}

// status is the commit status of run e in phase: pending while it waits or runs, then its
// verdict with its counts and the gate's judgement.
func (s *Service) status(e *domain.Execution, proj *domain.Project, phase string) host.Status {
	st := host.Status{TargetURL: s.runLink(e), Context: statusContext(proj)}
	if phase == phaseQueued || !e.Status.Final() {
		st.State, st.Description = host.Pending, "Verdict run "+e.TaskID+" is queued"
		if e.Status == domain.ExecRunning || e.Status == domain.ExecAnalyzing {
			st.Description = "Verdict run " + e.TaskID + " is running"
		}
		return st
	}
	switch e.Status {
	case domain.ExecPassed, domain.ExecUnstable:
		st.State = host.Success
	case domain.ExecFailed:
		st.State = host.Failure
	case domain.ExecCancelled:
		st.State = host.Cancelled
	default:
		st.State = host.Error
	}
	gate := gateLine(e)
	if e.Gate != nil && e.Gate.Status == domain.GateFailed && st.State == host.Success {
		st.State = host.Failure
	}
	st.Description = host.Clip(strings.TrimSuffix(string(e.Status)+": "+counts(e)+"; "+gate, "; "), host.MaxDescription)
	return st
}

// counts are a run's test counts in a few words.
func counts(e *domain.Execution) string {
	sum := e.Summary
	if sum.Total == 0 {
		return "no tests reported"
	}
	s := fmt.Sprintf("%d of %d failed", sum.Failed, sum.Total)
	if sum.Failed == 0 {
		s = fmt.Sprintf("%d passed", sum.Passed)
	}
	if sum.Flaky > 0 {
		s += fmt.Sprintf(", %d flaky", sum.Flaky)
	}
	return s
}

// gateLine is the gate's judgement in a few words; "" without a gate.
func gateLine(e *domain.Execution) string {
	if e.Gate == nil {
		return ""
	}
	if e.Gate.Status != domain.GateFailed {
		return "gate passed"
	}
	for _, r := range e.Gate.Rules {
		if !r.Passed && r.Message != "" {
			return "gate failed: " + r.Message
		}
	}
	return "gate failed"
}

// marker is the hidden line that names the project's comment on a request.
func marker(proj *domain.Project) string { return "<!-- verdict:project:" + proj.ID + " -->" }

// maxComment bounds a comment (GitHub allows 65,536 characters).
const maxComment = 60000

// comment is the request's comment about run e: the verdict, the gate's rules that failed, then
// the run's story as the trackers' tickets tell it (counts, failing tests, analysis, report).
func (s *Service) comment(ctx context.Context, e *domain.Execution, proj *domain.Project) string {
	var b strings.Builder
	b.WriteString(marker(proj) + "\n")
	icon := "✅"
	switch {
	case e.Status == domain.ExecFailed || e.Gate != nil && e.Gate.Status == domain.GateFailed:
		icon = "❌"
	case e.Status != domain.ExecPassed && e.Status != domain.ExecUnstable:
		icon = "⚠️"
	}
	fmt.Fprintf(&b, "### %s Verdict: %s — %s\n\n", icon, mdPlain(proj.Name), e.Status)
	fmt.Fprintf(&b, "%s · commit %s · [run %s](%s)\n\n", counts(e), mdPlain(e.Labels[domain.CommitLabel]), mdPlain(e.TaskID), s.runLink(e))
	if e.Gate != nil {
		if e.Gate.Status == domain.GateFailed {
			b.WriteString("**Release gate failed**\n\n")
			for _, r := range e.Gate.Rules {
				if !r.Passed {
					fmt.Fprintf(&b, "- %s\n", mdPlain(r.Message))
				}
			}
			b.WriteString("\n")
		} else {
			b.WriteString("**Release gate passed**\n\n")
		}
	}
	s.newFailures(ctx, &b, e)
	b.WriteString("<details><summary>Details</summary>\n\n")
	b.WriteString(integrations.RunMarkdown(e, s.reportURL(ctx, e)))
	b.WriteString("\n</details>\n\n_Updated by each run of this project on this request._\n")
	out := b.String()
	if len(out) > maxComment {
		out = host.Clip(out, maxComment-200) + "\n\n</details>\n"
	}
	return out
}

// maxListed bounds the tests a comment's lists name.
const maxListed = 20

// newFailures writes the tests that fail in run e and did not in its baseline, and those that
// became flaky, when the run has a baseline; nothing when it has none or it cannot be read.
func (s *Service) newFailures(ctx context.Context, b *strings.Builder, e *domain.Execution) {
	if s.compare == nil {
		return
	}
	c, err := s.compare(ctx, identity.Automation(e.OrganizationID), e.TaskID, "")
	if err != nil {
		s.log.Warn("comparing a run with its baseline for its request's comment failed", "task", e.TaskID, "err", err)
		return
	}
	if c.Base == nil {
		return
	}
	for _, l := range []struct {
		title string
		tests []history.TestDiff
	}{{"New failures", c.NewFailures}, {"Newly flaky", c.NewlyFlaky}, {"Fixed", c.Fixed}} {
		if len(l.tests) == 0 {
			continue
		}
		fmt.Fprintf(b, "**%s (%d)** since run %s:\n\n", l.title, len(l.tests), mdPlain(c.Base.TaskID))
		for i, t := range l.tests {
			if i == maxListed {
				fmt.Fprintf(b, "- …and %d more\n", len(l.tests)-maxListed)
				break
			}
			name := t.Name
			if t.Suite != "" {
				name = t.Suite + " › " + t.Name
			}
			fmt.Fprintf(b, "- %s\n", mdPlain(host.Clip(name, 300)))
		}
		b.WriteString("\n")
	}
}

// mdPlain is text on one line with Markdown's markup characters escaped.
func mdPlain(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune("\\`*_[]<>|~#!", r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
