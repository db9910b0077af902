package sqlstore

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Projects returns the project repository.
func (s *Store) Projects() store.ProjectRepo { return projectRepo{s} }

type projectRepo struct{ s *Store }

const projectColumns = `id, organization_id, name, image, target_urls, default_folder, timeout_seconds,
	report_folders, env_vars, repository, created_at, updated_at, shards, retries`

func scanProject(r scanner) (*domain.Project, error) {
	var p domain.Project
	var targetURLs, reportFolders, envVars string
	var created, updated int64
	if err := r.Scan(&p.ID, &p.OrganizationID, &p.Name, &p.Image, &targetURLs, &p.DefaultFolder, &p.TimeoutSeconds,
		&reportFolders, &envVars, &p.Repository, &created, &updated, &p.Shards, &p.Retries); err != nil {
		return nil, err
	}
	if err := unmarshalJSON(targetURLs, &p.TargetURLs, reportFolders, &p.ReportFolders, envVars, &p.EnvVars); err != nil {
		return nil, err
	}
	p.CreatedAt = fromMillis(created)
	p.UpdatedAt = fromMillis(updated)
	return &p, nil
}

// projectJSON encodes the project's JSON columns: target URLs, report folders, variables.
func projectJSON(p *domain.Project) (targetURLs, reportFolders, envVars string, err error) {
	j, err := marshalJSON(p.TargetURLs, p.ReportFolders, p.EnvVars)
	if err != nil {
		return "", "", "", err
	}
	return j[0], j[1], j[2], nil
}

// Create stores p; ErrConflict when its organization already has a project of that name
// (names compare exactly). Secret variable values are stored as given: the service encrypts them.
func (r projectRepo) Create(ctx context.Context, p *domain.Project) error {
	ensureID(&p.ID)
	targetURLs, reportFolders, envVars, err := projectJSON(p)
	if err != nil {
		return err
	}
	_, err = r.s.exec(ctx, `INSERT INTO projects (`+projectColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		p.ID, p.OrganizationID, p.Name, p.Image, targetURLs, p.DefaultFolder, p.TimeoutSeconds, reportFolders, envVars,
		p.Repository, millis(p.CreatedAt), millis(p.UpdatedAt), p.Shards, p.Retries)
	return err
}

func (r projectRepo) Get(ctx context.Context, orgID, id string) (*domain.Project, error) {
	return get(ctx, r.s, scanProject,
		`SELECT `+projectColumns+` FROM projects WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r projectRepo) List(ctx context.Context, orgID string) ([]domain.Project, error) {
	return list(ctx, r.s, scanProject,
		`SELECT `+projectColumns+` FROM projects WHERE organization_id = ? ORDER BY created_at, id`, orgID)
}

// Update replaces every field but the creation time of the project p.OrganizationID/p.ID;
// ErrNotFound when there is none, ErrConflict when the new name is taken in the organization.
func (r projectRepo) Update(ctx context.Context, p *domain.Project) error {
	targetURLs, reportFolders, envVars, err := projectJSON(p)
	if err != nil {
		return err
	}
	return r.s.execOne(ctx, `UPDATE projects SET name = ?, image = ?, target_urls = ?, default_folder = ?,
		timeout_seconds = ?, report_folders = ?, env_vars = ?, repository = ?, updated_at = ?,
		shards = ?, retries = ?
		WHERE organization_id = ? AND id = ?`,
		p.Name, p.Image, targetURLs, p.DefaultFolder, p.TimeoutSeconds, reportFolders, envVars, p.Repository, millis(p.UpdatedAt),
		p.Shards, p.Retries,
		p.OrganizationID, p.ID)
}

// Delete removes the project; its executions keep their project ID.
func (r projectRepo) Delete(ctx context.Context, orgID, id string) error {
	return r.s.execOne(ctx, `DELETE FROM projects WHERE organization_id = ? AND id = ?`, orgID, id)
}

func (r projectRepo) Count(ctx context.Context, orgID string) (int, error) {
	return r.s.count(ctx, `SELECT COUNT(*) FROM projects WHERE organization_id = ?`, orgID)
}

// marshalJSON encodes each value for a JSON text column. A nil slice or map is stored as null
// and read back as nil, an empty one as []/{}: what the caller stored is what it reads.
func marshalJSON(values ...any) ([]string, error) {
	out := make([]string, len(values))
	var b bytes.Buffer
	enc := newColumnEncoder(&b)
	for i, v := range values {
		b.Reset()
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		out[i] = string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	}
	return out, nil
}

// newColumnEncoder encodes JSON for a text column without escaping <, > and & (which
// json.Marshal writes as six-byte escapes, for JSON pasted into HTML): a column is never served
// as HTML, and test results full of those characters would take six times their size, in the
// database and in every read of them.
func newColumnEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// unmarshalJSON decodes pairs of (column text, destination pointer).
func unmarshalJSON(pairs ...any) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := decodeJSON(pairs[i].(string), pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// decodeJSON decodes a column's JSON text into dst. What rows hold the most of, lists of plain
// strings, run summaries, test lists and tests' newest results, skip the JSON decoder: listing
// runs decodes several per row, and recording a run reads each of its tests' results.
func decodeJSON(text string, dst any) error {
	switch dst := dst.(type) {
	case *[]string:
		if v, ok := plainStrings(text); ok {
			*dst = v
			return nil
		}
	case *domain.Summary:
		if v, ok := plainSummary(text); ok {
			*dst = v
			return nil
		}
	case *[]domain.TestResult:
		if v, ok := plainTests(text); ok {
			*dst = v
			return nil
		}
	case *[]domain.TestPoint:
		if v, ok := plainPoints(text); ok {
			*dst = v
			return nil
		}
	}
	return json.Unmarshal([]byte(text), dst)
}

// plainStrings decodes a JSON array of strings as json.Marshal writes it, when no string needs
// an escape (then no element holds a quote, and `","` only separates). Anything else (escapes,
// control characters, spaces, invalid UTF-8, which the decoder would replace) is left to the
// decoder: false.
func plainStrings(text string) ([]string, bool) {
	if text == "[]" {
		return []string{}, true
	}
	if len(text) < 4 || text[:2] != `["` || text[len(text)-2:] != `"]` || !utf8.ValidString(text) {
		return nil, false
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	out := strings.Split(text[2:len(text)-2], `","`)
	for _, s := range out {
		if strings.IndexByte(s, '"') >= 0 {
			return nil, false
		}
	}
	return out, true
}

// plainSummary decodes a Summary as json.Marshal writes it (its fields in order, counts without
// sign or leading zero); false for anything else, which is left to the decoder.
func plainSummary(text string) (domain.Summary, bool) {
	var v domain.Summary
	rest := text
	for _, f := range [...]struct {
		key string
		dst *int
	}{{`{"total":`, &v.Total}, {`,"passed":`, &v.Passed}, {`,"failed":`, &v.Failed}, {`,"skipped":`, &v.Skipped}, {`,"flaky":`, &v.Flaky}} {
		var ok bool
		if rest, ok = strings.CutPrefix(rest, f.key); !ok {
			return v, false
		}
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 || (i > 1 && rest[0] == '0') {
			return v, false
		}
		n, err := strconv.Atoi(rest[:i])
		if err != nil {
			return v, false
		}
		*f.dst, rest = n, rest[i:]
	}
	return v, rest == "}"
}

// plainTests decodes a run's tests as json.Marshal writes them (each TestResult's fields in
// order, "error", "shard" and "attachments" only when set, no string needing an escape, counts without a sign or a
// leading zero): the overview reads thousands of runs' tests, which encoding/json decodes
// several times slower. Anything else is left to the decoder: false.
func plainTests(text string) ([]domain.TestResult, bool) {
	if text == "[]" {
		return []domain.TestResult{}, true
	}
	if len(text) < 2 || text[0] != '[' || text[len(text)-1] != ']' || !utf8.ValidString(text) {
		return nil, false
	}
	for i := 0; i < len(text); i++ {
		if c := text[i]; c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	out := make([]domain.TestResult, 0, strings.Count(text, `{"name":"`))
	rest := text[1:]
	for {
		var t domain.TestResult
		var status string
		var ok bool
		if t.Name, rest, ok = plainString(rest, `{"name":"`); !ok {
			return nil, false
		}
		if t.Suite, rest, ok = plainString(rest, `,"suite":"`); !ok {
			return nil, false
		}
		if status, rest, ok = plainString(rest, `,"status":"`); !ok {
			return nil, false
		}
		t.Status = domain.TestStatus(status)
		if t.DurationMs, rest, ok = plainInt(rest, `,"durationMs":`); !ok {
			return nil, false
		}
		if strings.HasPrefix(rest, `,"error":"`) {
			if t.Error, rest, ok = plainString(rest, `,"error":"`); !ok || t.Error == "" {
				return nil, false
			}
		}
		var retries int64
		if retries, rest, ok = plainInt(rest, `,"retries":`); !ok || int64(int(retries)) != retries {
			return nil, false
		}
		t.Retries = int(retries)
		if strings.HasPrefix(rest, `,"shard":`) {
			var shard int64
			if shard, rest, ok = plainInt(rest, `,"shard":`); !ok || int64(int(shard)) != shard {
				return nil, false
			}
			t.Shard = int(shard)
		}
		if t.Attachments, rest, ok = plainAttachments(rest); !ok {
			return nil, false
		}
		out = append(out, t)
		switch {
		case rest == "}]":
			return out, true
		case strings.HasPrefix(rest, "},"):
			rest = rest[2:]
		default:
			return nil, false
		}
	}
}

// plainAttachments cuts a test's attachments, when text starts with them, as json.Marshal
// writes them (at least one).
func plainAttachments(text string) ([]domain.Attachment, string, bool) {
	rest, ok := strings.CutPrefix(text, `,"attachments":[`)
	if !ok {
		return nil, text, true
	}
	var out []domain.Attachment
	for {
		var a domain.Attachment
		if a.Name, rest, ok = plainString(rest, `{"name":"`); !ok {
			return nil, text, false
		}
		if a.ContentType, rest, ok = plainString(rest, `,"contentType":"`); !ok {
			return nil, text, false
		}
		if a.Path, rest, ok = plainString(rest, `,"path":"`); !ok {
			return nil, text, false
		}
		if strings.HasPrefix(rest, `,"retry":`) {
			var retry int64
			if retry, rest, ok = plainInt(rest, `,"retry":`); !ok || int64(int(retry)) != retry {
				return nil, text, false
			}
			a.Retry = int(retry)
		}
		if rest, ok = strings.CutPrefix(rest, "}"); !ok {
			return nil, text, false
		}
		out = append(out, a)
		if rest, ok = strings.CutPrefix(rest, "]"); ok {
			return out, rest, true
		}
		if rest, ok = strings.CutPrefix(rest, ","); !ok {
			return nil, text, false
		}
	}
}

// plainString cuts key (ending in the string's opening quote) and the string after it, up to
// its closing quote (the text holds no escapes).
func plainString(text, key string) (string, string, bool) {
	rest, ok := strings.CutPrefix(text, key)
	if !ok {
		return "", text, false
	}
	end := strings.IndexByte(rest, '"')
	if end < 0 {
		return "", text, false
	}
	return rest[:end], rest[end+1:], true
}

// plainInt cuts key and the count after it: digits, no sign, no leading zero.
func plainInt(text, key string) (int64, string, bool) {
	rest, ok := strings.CutPrefix(text, key)
	if !ok {
		return 0, text, false
	}
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && rest[0] == '0') {
		return 0, text, false
	}
	n, err := strconv.ParseInt(rest[:i], 10, 64)
	if err != nil {
		return 0, text, false
	}
	return n, rest[i:], true
}

// GateRules reads the project's gate rules (the gate_rules column: JSON, empty for none).
func (r projectRepo) GateRules(ctx context.Context, orgID, id string) (*domain.GateRules, error) {
	return get(ctx, r.s, func(sc scanner) (*domain.GateRules, error) {
		var text string
		if err := sc.Scan(&text); err != nil {
			return nil, err
		}
		if text == "" {
			return (*domain.GateRules)(nil), nil
		}
		var g domain.GateRules
		if err := decodeJSON(text, &g); err != nil {
			return nil, err
		}
		return &g, nil
	}, `SELECT gate_rules FROM projects WHERE organization_id = ? AND id = ?`, orgID, id)
}

// SetGateRules stores the project's gate rules as JSON (empty for nil).
func (r projectRepo) SetGateRules(ctx context.Context, orgID, id string, g *domain.GateRules) error {
	text := ""
	if g != nil {
		j, err := marshalJSON(g)
		if err != nil {
			return err
		}
		text = j[0]
	}
	return r.s.execOne(ctx, `UPDATE projects SET gate_rules = ? WHERE organization_id = ? AND id = ?`, text, orgID, id)
}
