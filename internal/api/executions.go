package api

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/store"
)

// ExecutionView is the JSON of an execution as the REST API and the execution-updated event
// show it. Secret values never appear: only the names of the run's variables.
func ExecutionView(e *domain.Execution, now time.Time) map[string]any {
	tests := e.Tests
	if tests == nil {
		tests = []domain.TestResult{}
	}
	v := obj{
		"taskId": e.TaskID, "organizationId": e.OrganizationID, "projectId": nullable(e.ProjectID),
		"image": e.Image, "command": e.Command, "environment": e.Environment, "baseUrl": e.BaseURL,
		"folder": folderOrAll(e.Folder), "timeoutSeconds": e.TimeoutSeconds, "envVarNames": nonNil(e.EnvNames),
		"status": e.Status, "queueReason": nullable(e.QueueReason), "error": nullable(e.Error), "exitCode": e.ExitCode,
		"queuedAt": ts(e.QueuedAt), "startedAt": tsPtr(e.StartedAt), "finishedAt": tsPtr(e.FinishedAt),
		"durationMs": e.DurationMs(now), "triggeredBy": e.TriggeredBy, "viaApiKey": e.ViaAPIKey,
		"cancelRequested": e.CancelRequested, "summary": e.Summary, "tests": tests,
		"reportFolders": nonNil(e.ReportDirs), "reportBytes": e.ReportBytes, "notes": nonNil(e.Notes),
	}
	base := "/reports/" + e.OrganizationID + "/" + url.PathEscape(e.TaskID) + "/"
	var html, allure any
	artifacts := []string{}
	for _, d := range e.ReportDirs {
		switch d {
		case "playwright-report", "reports", "html-report":
			if html == nil {
				html = base + d + "/"
			}
		case "allure-report":
			allure = base + d + "/"
		}
		artifacts = append(artifacts, base+d+"/")
	}
	v["htmlReportUrl"], v["allureReportUrl"], v["artifacts"] = html, allure, artifacts
	return v
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func folderOrAll(f string) string {
	if f == "" {
		return "all"
	}
	return f
}

func (s *Server) queueExecution(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Image          string            `json:"image"`
		Command        string            `json:"command"`
		Environment    string            `json:"environment"`
		BaseURL        string            `json:"baseUrl"`
		Folder         string            `json:"folder"`
		ProjectID      string            `json:"projectId"`
		EnvVars        map[string]string `json:"envVars"`
		TaskID         string            `json:"taskId"`
		TimeoutSeconds int               `json:"timeoutSeconds"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	e, err := s.runs.Queue(r.Context(), principalFrom(r), executions.QueueInput(in))
	if err != nil {
		s.fail(w, r, err, "Failed to queue execution")
		return
	}
	created(w, obj{"taskId": e.TaskID, "status": e.Status, "execution": ExecutionView(e, s.clock())})
}

func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := store.ExecutionFilter{ProjectID: q.Get("projectId"), Image: q.Get("image"), Limit: 25}
	var bad *domain.Error
	atoi := func(name string, def, lo, hi int) int {
		v := q.Get(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			bad = domain.BadRequest("Validation error", name+" must be an integer from "+strconv.Itoa(lo)+" to "+strconv.Itoa(hi))
		}
		return n
	}
	f.Limit = atoi("limit", 25, 1, 100)
	f.Offset = atoi("offset", 0, 0, 1<<30)
	if bad != nil {
		writeDomainError(w, bad)
		return
	}
	if st := q.Get("status"); st != "" {
		for _, part := range strings.Split(st, ",") {
			f.Statuses = append(f.Statuses, domain.ExecStatus(strings.ToUpper(strings.TrimSpace(part))))
		}
	}
	list, total, err := s.runs.List(r.Context(), principalFrom(r), f)
	if err != nil {
		s.fail(w, r, err, "Failed to list executions")
		return
	}
	now := s.clock()
	out := make([]map[string]any, len(list))
	for i := range list {
		out[i] = ExecutionView(&list[i], now)
		delete(out[i], "tests") // the list stays light; GET one execution for its tests
	}
	ok(w, obj{"data": obj{"executions": out, "total": total, "limit": f.Limit, "offset": f.Offset}})
}

func (s *Server) getExecution(w http.ResponseWriter, r *http.Request) {
	e, err := s.runs.Get(r.Context(), principalFrom(r), r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}
	ok(w, obj{"execution": ExecutionView(e, s.clock())})
}

func (s *Server) cancelExecution(w http.ResponseWriter, r *http.Request) {
	e, err := s.runs.CancelRun(r.Context(), principalFrom(r), r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to cancel execution")
		return
	}
	ok(w, obj{"message": "Cancellation requested", "execution": ExecutionView(e, s.clock())})
}

func (s *Server) deleteExecution(w http.ResponseWriter, r *http.Request) {
	if err := s.runs.Delete(r.Context(), principalFrom(r), r.PathValue("taskId")); err != nil {
		s.fail(w, r, err, "Failed to delete execution")
		return
	}
	ok(w, obj{"message": "Execution deleted"})
}

func (s *Server) configDefaults(w http.ResponseWriter, r *http.Request) {
	timeout, err := s.runs.OrgDefaultTimeout(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch defaults")
		return
	}
	ok(w, obj{"data": obj{"image": s.runs.DefaultImage, "baseUrl": s.runs.DefaultBaseURL, "folder": "all",
		"environment": "development", "timeoutSeconds": int(timeout / time.Second)}})
}

func (s *Server) testsStructure(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ts, err := s.runs.TestsStructure(r.Context(), principalFrom(r), q.Get("image"), q.Get("projectId"))
	if err != nil {
		s.fail(w, r, err, "Failed to read test structure")
		return
	}
	ok(w, obj{"data": obj{"image": ts.Image, "root": "/app/tests", "folders": nonNil(ts.Folders), "note": nullable(ts.Note)}})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	m, err := s.runs.Metrics(r.Context(), principalFrom(r), r.PathValue("image"))
	if err != nil {
		s.fail(w, r, err, "Failed to compute metrics")
		return
	}
	ok(w, obj{"data": obj{"sampleSize": m.SampleSize, "averageDurationMs": m.AverageDurationMs,
		"lastRunDurationMs": m.LastRunDurationMs, "passRate": m.PassRate, "isRegression": m.IsRegression, "flakyTests": m.FlakyTests}})
}
