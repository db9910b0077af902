package api

import (
	"net/url"
	"slices"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/identity"
)

// JSON shapes of the API's resources (docs/openapi.yaml), one type per view, shared by the REST
// API and the Socket.IO events. Timestamps are RFC 3339 in UTC, with milliseconds. Typed views
// encode without the reflection and key sorting of maps; the JSON is the same (key order aside).

func ts(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func tsPtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := ts(*t)
	return &s
}

// nullable is a string shown as null when empty.
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// User is a member of an organization. CreatedAt is left out of GET /api/auth/me.
type User struct {
	ID          string            `json:"id"`
	Email       string            `json:"email"`
	Name        string            `json:"name"`
	Role        domain.Role       `json:"role"`
	Status      domain.UserStatus `json:"status"`
	LastLoginAt *string           `json:"lastLoginAt"`
	CreatedAt   string            `json:"createdAt,omitempty"`
}

func userView(u *domain.User) User {
	return User{ID: u.ID, Email: u.Email, Name: u.Name, Role: u.Role, Status: u.Status,
		LastLoginAt: tsPtr(u.LastLoginAt), CreatedAt: ts(u.CreatedAt)}
}

// Limits are an organization's plan limits and its storage in use.
type Limits struct {
	MaxProjects             int   `json:"maxProjects"`
	MaxTestRuns             int   `json:"maxTestRuns"`
	MaxUsers                int   `json:"maxUsers"`
	MaxConcurrentRuns       int   `json:"maxConcurrentRuns"`
	MaxStorageBytes         int64 `json:"maxStorageBytes"`
	CurrentStorageUsedBytes int64 `json:"currentStorageUsedBytes"`
}

// Organization is a tenant. CreatedAt is left out of GET /api/auth/me.
type Organization struct {
	ID                string          `json:"id"`
	Name              string          `json:"name"`
	Slug              string          `json:"slug"`
	Plan              domain.Plan     `json:"plan"`
	Limits            Limits          `json:"limits"`
	UserCount         int             `json:"userCount"`
	UserLimit         int             `json:"userLimit"`
	AIAnalysisEnabled bool            `json:"aiAnalysisEnabled"`
	Features          domain.Features `json:"features"`
	AllowedImages     []string        `json:"allowedImages"`
	CreatedAt         string          `json:"createdAt,omitempty"`
	// EraseAt is when the organization is erased, while an erasure is scheduled.
	EraseAt *string `json:"eraseAt,omitempty"`
}

func orgView(o *domain.Organization, userCount int) Organization {
	l := o.Limits()
	return Organization{ID: o.ID, Name: o.Name, Slug: o.Slug, Plan: o.Plan,
		Limits: Limits{MaxProjects: l.MaxProjects, MaxTestRuns: l.MaxTestRuns, MaxUsers: l.MaxUsers,
			MaxConcurrentRuns: l.MaxConcurrentRuns, MaxStorageBytes: l.MaxStorageBytes, CurrentStorageUsedBytes: o.StorageUsedBytes},
		UserCount: userCount, UserLimit: l.MaxUsers, AIAnalysisEnabled: o.AIAnalysisEnabled, Features: o.Features,
		AllowedImages: nonNil(o.AllowedImages), CreatedAt: ts(o.CreatedAt), EraseAt: tsPtr(o.EraseAt)}
}

// Me is GET /api/auth/me: the caller and their organization, without creation times.
type Me struct {
	User
	Organization Organization `json:"organization"`
}

// SessionUser is the user part of a signup or login answer.
type SessionUser struct {
	ID               string      `json:"id"`
	Email            string      `json:"email"`
	Name             string      `json:"name"`
	Role             domain.Role `json:"role"`
	OrganizationID   string      `json:"organizationId"`
	OrganizationName string      `json:"organizationName"`
}

func sessionView(s *identity.Session) obj {
	return obj{"token": s.Token, "user": SessionUser{ID: s.User.ID, Email: s.User.Email, Name: s.User.Name,
		Role: s.User.Role, OrganizationID: s.Org.ID, OrganizationName: s.Org.Name}}
}

// Invitation is an invitation as its organization's admins see it.
type Invitation struct {
	ID            string                  `json:"id"`
	Email         string                  `json:"email"`
	Role          domain.Role             `json:"role"`
	Status        domain.InvitationStatus `json:"status"`
	InvitedBy     string                  `json:"invitedBy"`
	InvitedByName string                  `json:"invitedByName"`
	ExpiresAt     string                  `json:"expiresAt"`
	CreatedAt     string                  `json:"createdAt"`
}

func invitationView(i *domain.Invitation, now time.Time) Invitation {
	return Invitation{ID: i.ID, Email: i.Email, Role: i.Role, Status: i.EffectiveStatus(now),
		InvitedBy: i.InvitedBy, InvitedByName: i.InvitedByName, ExpiresAt: ts(i.ExpiresAt), CreatedAt: ts(i.CreatedAt)}
}

// NewAPIKey is a key as its creation answers it, beside the value shown only then.
type NewAPIKey struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Prefix    string `json:"prefix"`
	CreatedAt string `json:"createdAt"`
}

// APIKey is a key as listed.
type APIKey struct {
	NewAPIKey
	LastUsedAt *string `json:"lastUsedAt"`
}

func apiKeyView(k *domain.APIKey) APIKey {
	return APIKey{NewAPIKey: NewAPIKey{ID: k.ID, Name: k.Name, Prefix: k.Prefix, CreatedAt: ts(k.CreatedAt)},
		LastUsedAt: tsPtr(k.LastUsedAt)}
}

// Project is a project; secret values are masked.
type Project struct {
	ID             string            `json:"id"`
	Name           string            `json:"name"`
	Image          string            `json:"image"`
	TargetURLs     map[string]string `json:"targetUrls"`
	DefaultFolder  string            `json:"defaultFolder"`
	TimeoutSeconds int               `json:"timeoutSeconds"`
	ReportFolders  []string          `json:"reportFolders"`
	EnvVars        []domain.EnvVar   `json:"envVars"`
	Repository     string            `json:"repository"`
	CreatedAt      string            `json:"createdAt"`
	UpdatedAt      string            `json:"updatedAt"`
	// Shards and Retries are the defaults of the project's runs.
	Shards  int `json:"shards"`
	Retries int `json:"retries"`
}

// TestCase is a manual test case; priority is null when it has none.
type TestCase struct {
	ID            string            `json:"id"`
	ProjectID     string            `json:"projectId"`
	Title         string            `json:"title"`
	Suite         string            `json:"suite"`
	Tags          []string          `json:"tags"`
	Priority      *string           `json:"priority"`
	Preconditions string            `json:"preconditions"`
	Steps         []domain.TestStep `json:"steps"`
	CreatedBy     string            `json:"createdBy"`
	CreatedAt     string            `json:"createdAt"`
	UpdatedAt     string            `json:"updatedAt"`
}

func testCaseView(c *domain.TestCase) TestCase {
	steps := c.Steps
	if steps == nil {
		steps = []domain.TestStep{}
	}
	return TestCase{ID: c.ID, ProjectID: c.ProjectID, Title: c.Title, Suite: c.Suite, Tags: nonNil(c.Tags),
		Priority: nullable(string(c.Priority)), Preconditions: c.Preconditions, Steps: steps, CreatedBy: c.CreatedBy,
		CreatedAt: ts(c.CreatedAt), UpdatedAt: ts(c.UpdatedAt)}
}

// ExecutionListItem is an execution as GET /api/executions lists it: everything but its tests.
// Secret values never appear: only the names of the run's variables.
type ExecutionListItem struct {
	TaskID          string            `json:"taskId"`
	OrganizationID  string            `json:"organizationId"`
	ProjectID       *string           `json:"projectId"`
	Image           string            `json:"image"`
	Command         string            `json:"command"`
	Environment     string            `json:"environment"`
	BaseURL         string            `json:"baseUrl"`
	Folder          string            `json:"folder"`
	TimeoutSeconds  int               `json:"timeoutSeconds"`
	EnvVarNames     []string          `json:"envVarNames"`
	Status          domain.ExecStatus `json:"status"`
	QueueReason     *string           `json:"queueReason"`
	Error           *string           `json:"error"`
	ExitCode        *int              `json:"exitCode"`
	QueuedAt        string            `json:"queuedAt"`
	StartedAt       *string           `json:"startedAt"`
	FinishedAt      *string           `json:"finishedAt"`
	DurationMs      int64             `json:"durationMs"`
	TriggeredBy     string            `json:"triggeredBy"`
	ViaAPIKey       bool              `json:"viaApiKey"`
	Labels          map[string]string `json:"labels"`
	CancelRequested bool              `json:"cancelRequested"`
	// Runner is the ID of the runner that ran the run (remote:<name> for a remote runner); ""
	// before a runner claimed it.
	Runner          string         `json:"runner"`
	Summary         domain.Summary `json:"summary"`
	ReportFolders   []string       `json:"reportFolders"`
	ReportBytes     int64          `json:"reportBytes"`
	Notes           []string       `json:"notes"`
	HTMLReportURL   *string        `json:"htmlReportUrl"`
	AllureReportURL *string        `json:"allureReportUrl"`
	Artifacts       []string       `json:"artifacts"`
	// Gate is the project's quality gate's judgement of the run; null when the project has no
	// rules (or the run has not been judged yet).
	Gate *Gate `json:"gate"`
	// Pinned runs are exempt from retention until unpinned.
	Pinned bool `json:"pinned"`
	// FilesExpiredAt is when retention deleted the run's log and report files; null: kept.
	FilesExpiredAt *string `json:"filesExpiredAt"`
	// QuarantinedFailures are the run's failed tests that were quarantined when it ended:
	// their failures did not decide its status.
	QuarantinedFailures []QuarantinedFailure `json:"quarantinedFailures"`
	// TestsRecorded: the run's results are in its tests' histories and its gate is judged. A
	// finished run is recorded a moment after its final status (within a minute by the
	// catch-up when the database was away); until then its gate may still be null.
	TestsRecorded bool `json:"testsRecorded"`
	// ShardTotal is the number of containers the run is spread over (SHARD_TOTAL), 0 for a
	// run of one container; Retries how many retry containers its failed tests may get.
	ShardTotal int `json:"shardTotal"`
	Retries    int `json:"retries"`
}

// Shard is one container of a sharded run: a shard (index 1..shardTotal, retry 0) or a retry
// container of the failed tests (index 0, retry 1..).
type Shard struct {
	Index      int               `json:"index"`
	Retry      int               `json:"retry"`
	Status     domain.ExecStatus `json:"status"`
	Runner     string            `json:"runner"`
	StartedAt  *string           `json:"startedAt"`
	FinishedAt *string           `json:"finishedAt"`
	ExitCode   *int              `json:"exitCode"`
	Error      *string           `json:"error"`
	// Assigned counts the tests or test files the shard was given (VERDICT_TESTS_FILE); null:
	// none given (the framework splits by SHARD_INDEX/SHARD_TOTAL).
	Assigned *int `json:"assigned"`
	// Restarted: the shard's first runner was lost and it was started again.
	Restarted bool `json:"restarted"`
	// Reports are the links of the shard's own reports (those holding an index.html).
	Reports []string `json:"reports"`
}

// QuarantinedFailure is a failed test of a run whose failure did not count.
type QuarantinedFailure struct {
	Test   TestRef           `json:"test"`
	Status domain.TestStatus `json:"status"`
}

// TestRef names a tracked test.
type TestRef struct {
	ID    string `json:"id"`
	Suite string `json:"suite"`
	Name  string `json:"name"`
}

// Execution is the full view of an execution, as GET /api/executions/{taskId} and the
// execution-updated event show it.
type Execution struct {
	ExecutionListItem
	// Tests are the tests the run kept (domain.KeepTests), in report order; an event lists the
	// first of them only (ExecutionEvent).
	Tests []RunTest `json:"tests"`
	// TestsNotKept counts the run's tests past what a run keeps: in the summary, not in Tests.
	TestsNotKept int `json:"testsNotKept"`
	// TestsOmitted counts the kept tests an event leaves out of Tests (0 in the REST answers,
	// which list them all).
	TestsOmitted int `json:"testsOmitted"`
	// Analysis explains a FAILED or UNSTABLE run of an organization with analysis on; null
	// when there is none (yet). The list leaves it out.
	Analysis *domain.Analysis `json:"analysis"`
	// Shards are the containers of a sharded run, shards first, then retry containers; empty
	// for a run of one container. The list leaves them out.
	Shards []Shard `json:"shards"`
	// tickets are the tickets created from the run, oldest first: MarshalJSON lists them in a
	// member per registered tracker (its Spec's RunField: trackerAIssues for Linear's issues,
	// trackerBItems for Monday.com's items, jiraIssues for Jira's), then all of them in
	// tickets (RunTicket). The list leaves them out.
	tickets []domain.Ticket
}

// MarshalJSON encodes the view, then each registered tracker's tickets.
func (x Execution) MarshalJSON() ([]byte, error) {
	type fields Execution // the same members, without this method
	b, err := MarshalView(fields(x))
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1] // the closing brace
	for _, a := range trackerAPIs {
		var list []any
		for i := range x.tickets {
			if t := &x.tickets[i]; t.Provider == a.spec.Provider {
				list = append(list, a.ticketView(t))
			}
		}
		if list == nil {
			list = []any{}
		}
		v, err := MarshalView(list)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, ',', '"'), a.spec.RunField...), '"', ':')
		b = append(b, v...)
	}
	all := make([]RunTicket, len(x.tickets))
	for i, t := range x.tickets {
		all[i] = RunTicket{Provider: t.Provider, ID: t.ExternalID, Identifier: t.Identifier, URL: t.URL, Title: t.Title,
			CreatedAt: ts(t.CreatedAt)}
	}
	v, err := MarshalView(all)
	if err != nil {
		return nil, err
	}
	b = append(append(b, `,"tickets":`...), v...)
	return append(b, '}'), nil
}

// RunTest is a test as a run's view shows it: its result, with its attachments as links.
type RunTest struct {
	domain.TestResult
	// Attachments are the files its results name, as report URLs; absent when it has none, or
	// once the run's report files are deleted.
	Attachments []Attachment `json:"attachments,omitempty"`
}

// Attachment is a file a test's results name (a screenshot, video, trace...), served by the
// report route: URL is the file's path there, absolute on the origin that serves reports, to
// open as the run's reports open (a bearer token or API key where they are taken, else
// through a report link: ?token= from GET /api/executions/{taskId}/report-token).
type Attachment struct {
	Name        string `json:"name"`
	ContentType string `json:"contentType"`
	URL         string `json:"url"`
	Retry       int    `json:"retry,omitempty"`
}

// tests is list, tests of e, as the run's view shows them.
func (v Views) tests(e *domain.Execution, list []domain.TestResult) []RunTest {
	out := make([]RunTest, len(list))
	for i := range list {
		t := &list[i]
		out[i].TestResult = *t
		if len(t.Attachments) == 0 || e.FilesExpiredAt != nil {
			continue
		}
		task := e.TaskID
		if t.Shard > 0 { // a shard's reports are its container's
			task = domain.ShardTaskID(e.TaskID, t.Shard)
		}
		out[i].Attachments = make([]Attachment, len(t.Attachments))
		for j, a := range t.Attachments {
			out[i].Attachments[j] = Attachment{Name: a.Name, ContentType: a.ContentType, Retry: a.Retry,
				URL: v.ReportFileURL(e.OrganizationID, task, "", a.Path)}
		}
	}
	return out
}

// ReportFileURL is the URL of the file relPath of the reports of the organization's task
// (a run's, or a shard container's), on the origin that serves reports: through the report
// link whose token is link, or its plain path when link is "".
func (v Views) ReportFileURL(orgID, taskID, link, relPath string) string {
	u := v.reportOrigin + reportBase(orgID, taskID)
	if link != "" {
		u += "~" + link + "/"
	}
	return u + (&url.URL{Path: relPath}).EscapedPath()
}

// RunTicket is a ticket of a run in any tracker, as the run's tickets member lists it.
type RunTicket struct {
	Provider   string `json:"provider"`   // the tracker: linear, monday, jira
	ID         string `json:"id"`         // the tracker's ID of the ticket
	Identifier string `json:"identifier"` // its human key (ENG-7, QA-12); "" when the tracker has none
	URL        string `json:"url"`
	Title      string `json:"title"`
	CreatedAt  string `json:"createdAt"`
}

// Views makes the execution views, whose report links are absolute URLs on the origin that
// serves reports: the public URL, or the reports origin when reports have their own. The zero
// Views makes paths.
type Views struct {
	reportOrigin string
}

// NewViews returns the Views of a deployment (config.Config's PublicURL and ReportsURL).
func NewViews(publicURL, reportsURL string) Views {
	if reportsURL != "" {
		publicURL = reportsURL
	}
	return Views{reportOrigin: strings.TrimRight(publicURL, "/")}
}

// Bounds of the tests an execution-updated event carries: it goes to every member's socket
// and follower, who get the rest from GET /api/executions/{taskId}. The Socket.IO library
// escapes < and > in six bytes: an event's tests stay under 100 KiB on the wire.
const (
	EventTests     = 50
	EventTestBytes = 16 << 10
)

// ExecutionEvent is the view of e that the execution-updated events carry: Execution, with
// the first of its tests only (at most EventTests, EventTestBytes of JSON), failures first,
// and TestsOmitted counting the others.
func (v Views) ExecutionEvent(e *domain.Execution, now time.Time) Execution {
	x := v.execution(e, now, domain.PickTests(e.Tests, EventTests, EventTestBytes))
	x.TestsOmitted = len(e.Tests) - len(x.Tests)
	return x
}

// Execution is the full view of e at now (its duration so far while it runs).
func (v Views) Execution(e *domain.Execution, now time.Time) Execution {
	return v.execution(e, now, e.Tests)
}

// execution is the full view of e at now listing tests, of e's.
func (v Views) execution(e *domain.Execution, now time.Time, tests []domain.TestResult) Execution {
	x := Execution{ExecutionListItem: v.ExecutionListItem(e, now), Tests: v.tests(e, tests), Analysis: e.Analysis,
		TestsNotKept: max(e.Summary.Total-len(e.Tests), 0), tickets: e.Tickets, Shards: make([]Shard, 0, len(e.Parts))}
	for i := range e.Parts {
		p := &e.Parts[i]
		sh := Shard{Index: p.ShardIndex, Retry: p.Retry, Status: p.Status, Runner: p.RunnerID, StartedAt: tsPtr(p.StartedAt),
			FinishedAt: tsPtr(p.FinishedAt), ExitCode: p.ExitCode, Error: nullable(p.Error), Restarted: p.Attempt > 0,
			Reports: []string{}}
		if p.Assigned != nil {
			n := len(p.Assigned)
			sh.Assigned = &n
		}
		var links ExecutionListItem
		v.reportLinks(p, &links)
		sh.Reports = append(sh.Reports, links.Artifacts...)
		x.Shards = append(x.Shards, sh)
	}
	return x
}

// ReportURL is the link a ticket gives to a run's report: its htmlReportUrl, else its
// allureReportUrl, else its first linked report folder; "" when it has none.
func (v Views) ReportURL(e *domain.Execution) string {
	var item ExecutionListItem
	v.reportLinks(e, &item)
	switch {
	case item.HTMLReportURL != nil:
		return *item.HTMLReportURL
	case item.AllureReportURL != nil:
		return *item.AllureReportURL
	case len(item.Artifacts) > 0:
		return item.Artifacts[0]
	}
	return ""
}

// ExecutionListItem is the list view of e at now.
func (v Views) ExecutionListItem(e *domain.Execution, now time.Time) ExecutionListItem {
	folder := e.Folder
	if folder == "" {
		folder = "all"
	}
	item := ExecutionListItem{
		TaskID: e.TaskID, OrganizationID: e.OrganizationID, ProjectID: nullable(e.ProjectID),
		Image: e.Image, Command: e.Command, Environment: e.Environment, BaseURL: e.BaseURL,
		Folder: folder, TimeoutSeconds: e.TimeoutSeconds, EnvVarNames: nonNil(e.EnvNames),
		Status: e.Status, QueueReason: nullable(e.QueueReason), Error: nullable(e.Error), ExitCode: e.ExitCode,
		QueuedAt: ts(e.QueuedAt), StartedAt: tsPtr(e.StartedAt), FinishedAt: tsPtr(e.FinishedAt),
		DurationMs: e.DurationMs(now), TriggeredBy: e.TriggeredBy, ViaAPIKey: e.ViaAPIKey, Labels: e.Labels,
		CancelRequested: e.CancelRequested, Runner: e.RunnerID, Summary: e.Summary,
		ReportFolders: nonNil(e.ReportDirs), ReportBytes: e.ReportBytes, Notes: nonNil(e.Notes),
		Artifacts: []string{}, Gate: gateView(e.Gate), Pinned: e.Pinned, FilesExpiredAt: tsPtr(e.FilesExpiredAt), QuarantinedFailures: make([]QuarantinedFailure, len(e.QuarantinedFailures)),
		TestsRecorded: e.TestsRecorded, ShardTotal: e.Shards, Retries: e.Retries,
	}
	for i, q := range e.QuarantinedFailures {
		item.QuarantinedFailures[i] = QuarantinedFailure{Test: TestRef{ID: q.TestID, Suite: q.Suite, Name: q.Name}, Status: q.Status}
	}
	if item.Labels == nil {
		item.Labels = map[string]string{}
	}
	v.reportLinks(e, &item)
	return item
}

// reportLinks links the run's report folders that hold an index.html, and only those: a folder
// without one answers 404 (JUnit or raw results). e.ReportIndexes says which they are; a run
// that has not recorded them (nil) gets no links (the API fills them in first, see
// Server.recordIndexes).
func (v Views) reportLinks(e *domain.Execution, item *ExecutionListItem) {
	if len(e.ReportIndexes) == 0 || e.FilesExpiredAt != nil {
		return
	}
	base := v.reportOrigin + reportBase(e.OrganizationID, e.TaskID)
	item.Artifacts = make([]string, 0, len(e.ReportIndexes))
	for _, d := range e.ReportDirs {
		if !slices.Contains(e.ReportIndexes, d) {
			continue
		}
		u := base + d + "/"
		switch d {
		case "playwright-report", "reports", "html-report":
			if item.HTMLReportURL == nil {
				item.HTMLReportURL = &u
			}
		case "allure-report":
			item.AllureReportURL = &u
		}
		item.Artifacts = append(item.Artifacts, u)
	}
}
