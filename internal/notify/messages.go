package notify

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/integrations"
)

// event is one event as a webhook receives it (its JSON), and what the chat messages are made
// of. The run's story is the one a ticket tells (integrations.Summarize).
type event struct {
	ID             string          `json:"id"`
	Type           string          `json:"type"`
	CreatedAt      time.Time       `json:"createdAt"`
	OrganizationID string          `json:"organizationId"`
	Project        eventProject    `json:"project"`
	Run            *eventRun       `json:"run,omitempty"`
	NewFailures    *eventNewFailed `json:"newFailures,omitempty"`
	Schedule       *eventSchedule  `json:"schedule,omitempty"`

	story integrations.Summary
}

type eventProject struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

type eventRun struct {
	TaskID              string            `json:"taskId"`
	Status              string            `json:"status"`
	Image               string            `json:"image"`
	Summary             domain.Summary    `json:"summary"`
	Recovered           bool              `json:"recovered"`
	Gate                *domain.Gate      `json:"gate"`
	QuarantinedFailures int               `json:"quarantinedFailures"`
	FailingTests        []eventTest       `json:"failingTests"`
	Error               string            `json:"error,omitempty"`
	Labels              map[string]string `json:"labels"`
	StartedAt           *time.Time        `json:"startedAt"`
	FinishedAt          *time.Time        `json:"finishedAt"`
	URL                 string            `json:"url"`
	ReportURL           string            `json:"reportUrl"`
}

type eventTest struct {
	Name    string `json:"name"`
	Message string `json:"message"`
}

// eventNewFailed is the gate's verdict on new failures (its noNewFailures rule).
type eventNewFailed struct {
	Count          int    `json:"count"`
	BaselineTaskID string `json:"baselineTaskId"`
	Message        string `json:"message"`
}

type eventSchedule struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// event builds the event typ of h with its ID.
func (s *Service) event(h happening, typ, id string, project *domain.Project, reportURL string, now time.Time) *event {
	e := &event{ID: id, Type: typ, CreatedAt: now, OrganizationID: h.orgID, Project: eventProject{ID: project.ID, Name: project.Name}}
	if h.schedule != nil {
		e.Schedule = &eventSchedule{ID: h.schedule.id, Name: h.schedule.name, Reason: h.schedule.reason}
		return e
	}
	run := h.run
	e.story = integrations.Summarize(run, reportURL)
	r := &eventRun{TaskID: run.TaskID, Status: string(run.Status), Image: run.Image, Summary: run.Summary, Recovered: h.recovered,
		Gate: run.Gate, QuarantinedFailures: len(run.QuarantinedFailures), FailingTests: []eventTest{}, Error: run.Error,
		Labels: run.Labels, StartedAt: run.StartedAt, FinishedAt: run.FinishedAt, ReportURL: reportURL}
	if r.Labels == nil {
		r.Labels = map[string]string{}
	}
	if s.publicURL != "" {
		r.URL = strings.TrimRight(s.publicURL, "/") + "/runs/" + url.PathEscape(run.TaskID)
	}
	for _, t := range e.story.Failing {
		r.FailingTests = append(r.FailingTests, eventTest{Name: t.Name, Message: t.Message})
	}
	e.Run = r
	if typ == domain.EventTestNewFailure && h.newFailures != nil {
		base := ""
		if run.Gate != nil {
			base = run.Gate.BaselineTaskID
		}
		e.NewFailures = &eventNewFailed{Count: int(h.newFailures.Actual), BaselineTaskID: base, Message: h.newFailures.Message}
	}
	return e
}

// body is what a receiver of kind gets.
func (e *event) body(kind string) (string, error) {
	var v any = e
	switch kind {
	case domain.NotifySlack:
		v = e.slack()
	case domain.NotifyTeams:
		v = e.teams()
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// headline is the message's first line.
func (e *event) headline() string {
	switch {
	case e.Schedule != nil:
		return fmt.Sprintf("Verdict: schedule %s could not queue a run", e.Schedule.Name)
	case e.Type == domain.EventRunGateFailed:
		return "Quality gate failed: " + e.story.Title
	case e.Run != nil && e.Run.Recovered:
		return "Recovered: " + e.story.Title
	}
	return e.story.Title
}

// facts are the message's facts, label and text, in order.
func (e *event) facts() [][2]string {
	f := [][2]string{{"Project", e.Project.Name}}
	if e.Schedule != nil {
		return append(f, [2]string{"Schedule", e.Schedule.Name}, [2]string{"Reason", e.Schedule.Reason})
	}
	f = append(f, e.story.Facts...)
	if g := e.Run.Gate; g != nil {
		v := g.Status
		if g.BaselineTaskID != "" {
			v += " (baseline " + g.BaselineTaskID + ")"
		}
		f = append(f, [2]string{"Quality gate", v})
	}
	if n := e.Run.QuarantinedFailures; n > 0 {
		f = append(f, [2]string{"Quarantined failures", fmt.Sprint(n)})
	}
	return f
}

// gateLines are the failed rules of the run's gate.
func (e *event) gateLines() []string {
	if e.Run == nil || e.Run.Gate == nil || e.Run.Gate.Status != domain.GateFailed {
		return nil
	}
	var out []string
	for _, r := range e.Run.Gate.Rules {
		if !r.Passed {
			out = append(out, r.Rule+": "+r.Message)
		}
	}
	return out
}

// failingLines are the failing tests, one line each (the message's first line).
func (e *event) failingLines() []string {
	var out []string
	for _, t := range e.story.Failing {
		line := t.Name
		if m, _, _ := strings.Cut(t.Message, "\n"); m != "" {
			line += " — " + clipRunes(m, 200)
		}
		out = append(out, line)
	}
	if e.story.MoreFailing > 0 {
		out = append(out, fmt.Sprintf("…and %d more: see the report", e.story.MoreFailing))
	}
	return out
}

// links are the buttons: the run's page and its report.
func (e *event) links() [][2]string {
	var out [][2]string
	if e.Run != nil && e.Run.URL != "" {
		out = append(out, [2]string{"Open the run", e.Run.URL})
	}
	if e.Run != nil && e.Run.ReportURL != "" {
		out = append(out, [2]string{"Open the report", e.Run.ReportURL})
	}
	return out
}

// Slack's bounds of a Block Kit message.
const (
	slackHeaderRunes  = 150
	slackFieldRunes   = 2000
	slackFields       = 10
	slackSectionRunes = 3000
)

// slackText escapes s for Slack's mrkdwn: &, < and > are its control characters.
func slackText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

type obj = map[string]any

// slack is the Block Kit message of an incoming webhook: a header, the facts as fields, the
// gate's failed rules and the failing tests as sections, and the links as buttons; "text" is the
// notification's fallback.
func (e *event) slack() obj {
	head := e.headline()
	blocks := []obj{{"type": "header", "text": obj{"type": "plain_text", "text": clipRunes(head, slackHeaderRunes)}}}
	var fields []obj
	for _, f := range e.facts() {
		if len(fields) == slackFields {
			break
		}
		fields = append(fields, obj{"type": "mrkdwn", "text": clipRunes("*"+f[0]+"*\n"+slackText(f[1]), slackFieldRunes)})
	}
	blocks = append(blocks, obj{"type": "section", "fields": fields})
	section := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		var b strings.Builder
		b.WriteString("*" + title + "*")
		for _, l := range lines {
			b.WriteString("\n• " + slackText(l))
		}
		blocks = append(blocks, obj{"type": "section", "text": obj{"type": "mrkdwn", "text": clipRunes(b.String(), slackSectionRunes)}})
	}
	section("Quality gate failed", e.gateLines())
	section(fmt.Sprintf("Failing tests (%d)", len(e.story.Failing)+e.story.MoreFailing), e.failingLines())
	if links := e.links(); len(links) > 0 {
		var buttons []obj
		for _, l := range links {
			buttons = append(buttons, obj{"type": "button", "text": obj{"type": "plain_text", "text": l[0]}, "url": l[1]})
		}
		blocks = append(blocks, obj{"type": "actions", "elements": buttons})
	}
	return obj{"text": slackText(head), "blocks": blocks}
}

// teams is the workflow webhook's message: one Adaptive Card (1.4) with the headline, the facts
// as a FactSet, the gate's failed rules and the failing tests, and the links as OpenUrl actions.
func (e *event) teams() obj {
	body := []obj{{"type": "TextBlock", "text": e.headline(), "weight": "Bolder", "size": "Medium", "wrap": true}}
	var facts []obj
	for _, f := range e.facts() {
		facts = append(facts, obj{"title": f[0], "value": f[1]})
	}
	body = append(body, obj{"type": "FactSet", "facts": facts})
	block := func(title string, lines []string) {
		if len(lines) == 0 {
			return
		}
		body = append(body, obj{"type": "TextBlock", "text": title, "weight": "Bolder", "wrap": true, "spacing": "Medium"})
		body = append(body, obj{"type": "TextBlock", "text": clipRunes(strings.Join(lines, "\n\n"), slackSectionRunes), "wrap": true})
	}
	block("Quality gate failed", e.gateLines())
	block(fmt.Sprintf("Failing tests (%d)", len(e.story.Failing)+e.story.MoreFailing), e.failingLines())
	card := obj{"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.4",
		"body": body}
	if links := e.links(); len(links) > 0 {
		var actions []obj
		for _, l := range links {
			actions = append(actions, obj{"type": "Action.OpenUrl", "title": l[0], "url": l[1]})
		}
		card["actions"] = actions
	}
	return obj{"type": "message", "attachments": []obj{{"contentType": "application/vnd.microsoft.card.adaptive",
		"contentUrl": nil, "content": card}}}
}

func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
