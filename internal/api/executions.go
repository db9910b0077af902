package api

import (
	"bytes"
	"context"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/executions"
	"verdict/internal/junitxml"
	"verdict/internal/report"
	"verdict/internal/store"
)

// recordIndexes fills in which of a run's report folders hold an index.html when the run has not
// recorded it (runs stored before it was recorded at collection time): a few file lookups, for
// such runs only.
func (s *Server) recordIndexes(ctx context.Context, e *domain.Execution) {
	if e.ReportIndexes == nil && len(e.ReportDirs) > 0 && s.reports != nil {
		e.ReportIndexes = report.IndexedDirs(ctx, s.reports, e.OrganizationID, e.TaskID, e.ReportDirs)
	}
}

// executionPage is the answer of GET /api/executions, {"data":{"executions":[…],"total",
// "limit","offset"},"success":true}. Its items come encoded (most from finishedItems), so it is
// written out here, in the key order encoding/json gives it; a test holds the two alike.
type executionPage struct {
	Executions           [][]byte // encoded ExecutionListItems
	Total, Limit, Offset int
}

func (p *executionPage) appendJSON(b []byte) []byte {
	b = append(b, `{"data":{"executions":[`...)
	for i, item := range p.Executions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	b = append(b, `],"total":`...)
	b = strconv.AppendInt(b, int64(p.Total), 10)
	b = append(b, `,"limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, int64(p.Offset), 10)
	return append(b, "},\"success\":true}\n"...)
}

// finishedItems keeps the encoded list items of runs whose item does not change with time (runs
// in a final status, and runs waiting: their duration is fixed, their report links are on this
// server's fixed origin), by execution ID (never reused), each for the version of the run it was
// encoded from (domain.Execution.Version, which every write of the run moves on, on every
// replica). Encoding is then paid once per version of a run rather than on every page: a busy
// organization's first page is runs waiting. Bounded; past the bound an arbitrary item makes
// room.
type finishedItems struct {
	mu sync.RWMutex
	m  map[string]cachedItem
}

// cachedItem is an encoded item and the version of the run it shows.
type cachedItem struct {
	version itemVersion
	b       []byte
}

// itemVersion is the version of the run an item was encoded from.
type itemVersion int64

func versionOf(e *domain.Execution) itemVersion { return itemVersion(e.Version) }

const maxFinishedItems = 4096

// get is the item of run id encoded at version v; nil when none is kept.
func (c *finishedItems) get(id string, v itemVersion) []byte {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if it, ok := c.m[id]; ok && it.version == v {
		return it.b
	}
	return nil
}

func (c *finishedItems) put(id string, v itemVersion, item []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedItem)
	}
	if _, ok := c.m[id]; !ok && len(c.m) >= maxFinishedItems {
		for k := range c.m {
			delete(c.m, k)
			break
		}
	}
	c.m[id] = cachedItem{version: v, b: item}
}

// listItem is e's encoded list item at now; e is a run of the run list (its Version set). A
// finished run's item is kept once its tests are recorded and its gate judged (until then its
// gate may still be set), a waiting run's as it is; a running run's duration grows.
func (s *Server) listItem(ctx context.Context, e *domain.Execution, now time.Time) ([]byte, error) {
	kept := (e.Status.Final() && e.TestsRecorded || e.Status == domain.ExecPending) && e.ID != ""
	if kept {
		if b := s.finished.get(e.ID, versionOf(e)); b != nil {
			return b, nil
		}
	}
	if e.ReportIndexes == nil {
		c := *e // the list's runs may be shared (a store's cache): fill in a copy
		s.recordIndexes(ctx, &c)
		e = &c
	}
	b, err := MarshalView(s.views.ExecutionListItem(e, now)) // the list stays light: no tests
	if err == nil && kept {
		s.finished.put(e.ID, versionOf(e), b)
	}
	return b, err
}

func (s *Server) queueExecution(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Image          string            `json:"image"`
		Command        string            `json:"command"`
		Environment    string            `json:"environment"`
		BaseURL        string            `json:"baseUrl"`
		Folder         string            `json:"folder"`
		ProjectID      string            `json:"projectId"`
		EnvVars        map[string]string `json:"envVars"` // the client's own names: a map, so any key is taken
		TaskID         string            `json:"taskId"`
		TimeoutSeconds int               `json:"timeoutSeconds"`
		Labels         map[string]string `json:"labels"`
		Shards         *int              `json:"shards"`
		Retries        *int              `json:"retries"`
	}
	if err := decode(w, r, &in); err != nil {
		writeDomainError(w, err)
		return
	}
	q := executions.QueueInput{Image: in.Image, Command: in.Command, Environment: in.Environment, BaseURL: in.BaseURL,
		Folder: in.Folder, ProjectID: in.ProjectID, EnvVars: in.EnvVars, TaskID: in.TaskID,
		TimeoutSeconds: in.TimeoutSeconds, Labels: in.Labels, Retries: in.Retries}
	if in.Shards != nil {
		if *in.Shards < 1 {
			writeDomainError(w, domain.BadRequest("Validation error", "shards must be at least 1"))
			return
		}
		q.Shards = *in.Shards
	}
	e, err := s.executions.Queue(r.Context(), principalFrom(r), q)
	if err != nil {
		s.fail(w, r, err, "Failed to queue execution")
		return
	}
	created(w, obj{"taskId": e.TaskID, "status": e.Status, "execution": s.views.Execution(e, s.clock())})
}

// parseExecutionFilter reads the query of GET /api/executions: limit, offset, label (repeated),
// status (comma-separated, any case), projectId and image. The executions service checks the
// filter's parts further (executions.CheckFilter).
func parseExecutionFilter(q url.Values) (store.ExecutionFilter, error) {
	f := store.ExecutionFilter{ProjectID: q.Get("projectId"), Image: q.Get("image"), Limit: 25}
	qp := &query{v: q}
	f.Limit = qp.int("limit", 25, 1, 100)
	f.Offset = qp.int("offset", 0, 0, 1<<30)
	if qp.bad != nil {
		return f, qp.bad
	}
	labels := q["label"]
	if len(labels) > domain.MaxLabels {
		return f, domain.BadRequest("Validation error", "at most "+strconv.Itoa(domain.MaxLabels)+" label filters")
	}
	for _, v := range labels {
		l, err := domain.ParseLabelFilter(v)
		if err != nil {
			return f, err
		}
		f.Labels = append(f.Labels, l)
	}
	if st := q.Get("status"); st != "" {
		for _, part := range strings.Split(st, ",") {
			f.Statuses = append(f.Statuses, domain.ExecStatus(strings.ToUpper(strings.TrimSpace(part))))
		}
	}
	return f, nil
}

func (s *Server) listExecutions(w http.ResponseWriter, r *http.Request) {
	f, err := parseExecutionFilter(r.URL.Query())
	if err != nil {
		s.fail(w, r, err, "Failed to list executions")
		return
	}
	list, total, err := s.executions.List(r.Context(), principalFrom(r), f)
	if err != nil {
		s.fail(w, r, err, "Failed to list executions")
		return
	}
	now := s.clock()
	page := executionPage{Executions: make([][]byte, len(list)), Total: total, Limit: f.Limit, Offset: f.Offset}
	size := 64
	for i := range list {
		if page.Executions[i], err = s.listItem(r.Context(), &list[i], now); err != nil {
			s.fail(w, r, err, "Failed to list executions")
			return
		}
		size += len(page.Executions[i]) + 1
	}
	buf := jsonBuffers.Get().(*bytes.Buffer)
	buf.Reset()
	buf.Grow(size)
	writeBody(w, http.StatusOK, page.appendJSON(buf.AvailableBuffer()))
	if buf.Cap() <= maxPooledBuffer {
		jsonBuffers.Put(buf)
	}
}

func (s *Server) getExecution(w http.ResponseWriter, r *http.Request) {
	e, err := s.executions.Get(r.Context(), principalFrom(r), r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}
	s.recordIndexes(r.Context(), e)
	ok(w, obj{"execution": s.views.Execution(e, s.clock())})
}

// executionJUnit answers the run's tests (a sharded run's merged tests) as a JUnit XML file to
// download, what CI systems read: the tests the run keeps, as its view lists them.
func (s *Server) executionJUnit(w http.ResponseWriter, r *http.Request) {
	e, err := s.executions.Get(r.Context(), principalFrom(r), r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}
	tests := make([]junitxml.Test, len(e.Tests))
	for i, t := range e.Tests {
		tests[i] = junitxml.Test{Name: t.Name, Suite: t.Suite, Status: string(t.Status), DurationMs: t.DurationMs,
			Error: t.Error, Retries: t.Retries}
	}
	var b bytes.Buffer
	if err := junitxml.Write(&b, e.TaskID, tests); err != nil {
		s.fail(w, r, err, "Failed to fetch execution")
		return
	}
	w.Header().Set("Content-Type", "application/xml; charset=utf-8")
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": e.TaskID + "-junit.xml"}))
	w.Write(b.Bytes())
}

func (s *Server) cancelExecution(w http.ResponseWriter, r *http.Request) {
	e, err := s.executions.Cancel(r.Context(), principalFrom(r), r.PathValue("taskId"))
	if err != nil {
		s.fail(w, r, err, "Failed to cancel execution")
		return
	}
	s.recordIndexes(r.Context(), e)
	ok(w, obj{"message": "Cancellation requested", "execution": s.views.Execution(e, s.clock())})
}

func (s *Server) deleteExecution(w http.ResponseWriter, r *http.Request) {
	if err := s.executions.Delete(r.Context(), principalFrom(r), r.PathValue("taskId")); err != nil {
		s.fail(w, r, err, "Failed to delete execution")
		return
	}
	ok(w, obj{"message": "Execution deleted"})
}

func (s *Server) configDefaults(w http.ResponseWriter, r *http.Request) {
	d, err := s.executions.Defaults(r.Context(), principalFrom(r))
	if err != nil {
		s.fail(w, r, err, "Failed to fetch defaults")
		return
	}
	ok(w, obj{"data": obj{"image": d.Image, "baseUrl": d.BaseURL, "folder": "all",
		"environment": "development", "timeoutSeconds": int(d.Timeout / time.Second)}})
}

func (s *Server) testsStructure(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ts, err := s.executions.TestsStructure(r.Context(), principalFrom(r), q.Get("image"), q.Get("projectId"))
	if err != nil {
		s.fail(w, r, err, "Failed to read test structure")
		return
	}
	ok(w, obj{"data": obj{"image": ts.Image, "root": "/app/tests", "folders": nonNil(ts.Folders), "note": nullable(ts.Note)}})
}

func (s *Server) metrics(w http.ResponseWriter, r *http.Request) {
	m, err := s.executions.Insights(r.Context(), principalFrom(r), r.PathValue("image"))
	if err != nil {
		s.fail(w, r, err, "Failed to compute metrics")
		return
	}
	ok(w, obj{"data": obj{"sampleSize": m.SampleSize, "averageDurationMs": m.AverageDurationMs,
		"lastRunDurationMs": m.LastRunDurationMs, "passRate": m.PassRate, "isRegression": m.IsRegression, "flakyTests": m.FlakyTests}})
}
