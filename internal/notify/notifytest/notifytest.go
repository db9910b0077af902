// Package notifytest holds fake receivers of notifications for tests: a Slack incoming webhook,
// a Microsoft Teams workflow webhook and a generic webhook, each an HTTP server that checks a
// request as the real receiver would (method, content type, the message's shape and bounds, the
// signature) and answers as it does: Slack 200 "ok" or 400 "invalid_payload"/"invalid_blocks",
// Teams 202 or 400, a webhook 2xx or 401 for a bad signature. Each records what it accepted.
package notifytest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// Received is one request a receiver accepted.
type Received struct {
	At      time.Time
	EventID string // X-Verdict-Event-Id (webhooks)
	Event   string // X-Verdict-Event (webhooks)
	Body    map[string]any
}

// Receiver is a fake receiver over HTTP.
type Receiver struct {
	URL string

	t        testing.TB
	srv      *httptest.Server
	check    func(r *http.Request, body []byte) (status int, answer string, rec *Received)
	mu       sync.Mutex
	got      []Received
	refused  []string      // why requests were refused
	answer   func() int    // for webhooks: the status of an accepted request (nil: 200)
	delay    time.Duration // before answering
	attempts int
}

func start(t testing.TB, addr string, check func(r *http.Request, body []byte) (int, string, *Received)) *Receiver {
	rc := &Receiver{t: t, check: check}
	rc.srv = httptest.NewUnstartedServer(http.HandlerFunc(rc.serve))
	if addr != "" {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		rc.srv.Listener = l
	}
	rc.srv.Start()
	rc.URL = rc.srv.URL
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	rc.mu.Lock()
	rc.attempts++
	delay := rc.delay
	rc.mu.Unlock()
	time.Sleep(delay)
	if r.Method != http.MethodPost {
		rc.refuse(w, http.StatusMethodNotAllowed, "method "+r.Method)
		return
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		rc.refuse(w, http.StatusBadRequest, "content type "+ct)
		return
	}
	status, answer, rec := rc.check(r, body)
	if rec == nil {
		rc.refuse(w, status, answer)
		return
	}
	rc.mu.Lock()
	if rc.answer != nil {
		status = rc.answer()
	}
	if status < 300 {
		rec.At = time.Now()
		rc.got = append(rc.got, *rec)
	}
	rc.mu.Unlock()
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

func (rc *Receiver) refuse(w http.ResponseWriter, status int, why string) {
	rc.mu.Lock()
	rc.refused = append(rc.refused, why)
	rc.mu.Unlock()
	http.Error(w, why, status)
}

// Got is what the receiver accepted (answered 2xx), in order.
func (rc *Receiver) Got() []Received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Received(nil), rc.got...)
}

// Refused is why it refused requests (a shape or a signature it would not take).
func (rc *Receiver) Refused() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.refused...)
}

// Attempts counts the requests that reached it.
func (rc *Receiver) Attempts() int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.attempts
}

// Answer makes the receiver answer a well-formed request with the status f gives (a 5xx to be
// retried, a 4xx that is not); a non-2xx answer is not recorded as accepted.
func (rc *Receiver) Answer(f func() int) {
	rc.mu.Lock()
	rc.answer = f
	rc.mu.Unlock()
}

// Delay makes the receiver wait d before answering.
func (rc *Receiver) Delay(d time.Duration) {
	rc.mu.Lock()
	rc.delay = d
	rc.mu.Unlock()
}

// Close stops the server: connections to it are refused from then on.
func (rc *Receiver) Close() { rc.srv.Close() }

// Slack bounds of a Block Kit message sent to an incoming webhook.
const (
	slackBlocks       = 50
	slackHeaderRunes  = 150
	slackSectionRunes = 3000
	slackFieldRunes   = 2000
	slackFields       = 10
	slackButtonRunes  = 75
	slackURLRunes     = 3000
)

// Slack starts a fake Slack incoming webhook: a JSON body with a text or blocks, each block of a
// known type within Slack's bounds; it answers 200 "ok", or 400 "invalid_payload" (not JSON,
// neither text nor blocks) or "invalid_blocks".
func Slack(t testing.TB) *Receiver {
	return start(t, "", func(_ *http.Request, body []byte) (int, string, *Received) {
		var msg map[string]any
		if json.Unmarshal(body, &msg) != nil {
			return http.StatusBadRequest, "invalid_payload", nil
		}
		blocks, _ := msg["blocks"].([]any)
		text, _ := msg["text"].(string)
		if text == "" && len(blocks) == 0 {
			return http.StatusBadRequest, "invalid_payload", nil
		}
		if why := slackBlocksProblem(blocks); why != "" {
			return http.StatusBadRequest, "invalid_blocks: " + why, nil
		}
		return http.StatusOK, "ok", &Received{Body: msg}
	})
}

func runes(v any) int {
	s, _ := v.(string)
	return utf8.RuneCountInString(s)
}

func textObject(v any, types ...string) (map[string]any, bool) {
	o, ok := v.(map[string]any)
	if !ok {
		return nil, false
	}
	typ, _ := o["type"].(string)
	for _, t := range types {
		if typ == t {
			s, ok := o["text"].(string)
			return o, ok && s != ""
		}
	}
	return nil, false
}

func slackBlocksProblem(blocks []any) string {
	if len(blocks) > slackBlocks {
		return "too many blocks"
	}
	for i, b := range blocks {
		blk, _ := b.(map[string]any)
		switch blk["type"] {
		case "header":
			o, ok := textObject(blk["text"], "plain_text")
			if !ok || runes(o["text"]) > slackHeaderRunes {
				return fmt.Sprintf("block %d: a header needs plain_text of at most 150 characters", i)
			}
		case "section":
			fields, _ := blk["fields"].([]any)
			if blk["text"] == nil && len(fields) == 0 {
				return fmt.Sprintf("block %d: a section needs text or fields", i)
			}
			if blk["text"] != nil {
				o, ok := textObject(blk["text"], "plain_text", "mrkdwn")
				if !ok || runes(o["text"]) > slackSectionRunes {
					return fmt.Sprintf("block %d: section text", i)
				}
			}
			if len(fields) > slackFields {
				return fmt.Sprintf("block %d: more than 10 fields", i)
			}
			for _, f := range fields {
				o, ok := textObject(f, "plain_text", "mrkdwn")
				if !ok || runes(o["text"]) > slackFieldRunes {
					return fmt.Sprintf("block %d: a field", i)
				}
			}
		case "actions":
			els, _ := blk["elements"].([]any)
			if len(els) == 0 || len(els) > 25 {
				return fmt.Sprintf("block %d: actions need 1 to 25 elements", i)
			}
			for _, e := range els {
				el, _ := e.(map[string]any)
				o, ok := textObject(el["text"], "plain_text")
				u, _ := el["url"].(string)
				if el["type"] != "button" || !ok || runes(o["text"]) > slackButtonRunes || runes(u) > slackURLRunes ||
					(u != "" && !strings.HasPrefix(u, "http")) {
					return fmt.Sprintf("block %d: a button", i)
				}
			}
		case "divider", "context":
		default:
			return fmt.Sprintf("block %d: unknown type %v", i, blk["type"])
		}
	}
	return ""
}

// Teams starts a fake Teams workflow webhook ("When a Teams webhook request is received" posting
// a card): a message whose attachments hold an Adaptive Card of version 1.4 or later with a
// body of typed elements; it answers 202 Accepted, or 400.
func Teams(t testing.TB) *Receiver {
	return start(t, "", func(_ *http.Request, body []byte) (int, string, *Received) {
		var msg map[string]any
		if json.Unmarshal(body, &msg) != nil {
			return http.StatusBadRequest, "the body is not JSON", nil
		}
		if msg["type"] != "message" {
			return http.StatusBadRequest, `type must be "message"`, nil
		}
		atts, _ := msg["attachments"].([]any)
		if len(atts) == 0 {
			return http.StatusBadRequest, "no attachments", nil
		}
		for _, a := range atts {
			att, _ := a.(map[string]any)
			if att["contentType"] != "application/vnd.microsoft.card.adaptive" {
				return http.StatusBadRequest, "an attachment is not an Adaptive Card", nil
			}
			card, _ := att["content"].(map[string]any)
			if card["type"] != "AdaptiveCard" {
				return http.StatusBadRequest, "content is not an AdaptiveCard", nil
			}
			v, _ := card["version"].(string)
			major, minor, _ := strings.Cut(v, ".")
			mi, _ := strconv.Atoi(minor)
			if major != "1" || mi < 4 {
				return http.StatusBadRequest, "the card's version must be 1.4 or later, got " + v, nil
			}
			els, _ := card["body"].([]any)
			if len(els) == 0 {
				return http.StatusBadRequest, "the card has no body", nil
			}
			for _, e := range els {
				el, _ := e.(map[string]any)
				switch el["type"] {
				case "TextBlock":
					if s, _ := el["text"].(string); s == "" {
						return http.StatusBadRequest, "a TextBlock without text", nil
					}
				case "FactSet":
					facts, _ := el["facts"].([]any)
					for _, f := range facts {
						fm, _ := f.(map[string]any)
						if _, ok := fm["title"].(string); !ok {
							return http.StatusBadRequest, "a fact without a title", nil
						}
						if _, ok := fm["value"].(string); !ok {
							return http.StatusBadRequest, "a fact without a value", nil
						}
					}
				case "Container", "ColumnSet", "Image", "ActionSet", "RichTextBlock":
				default:
					return http.StatusBadRequest, fmt.Sprintf("unknown element %v", el["type"]), nil
				}
			}
			acts, _ := card["actions"].([]any)
			for _, a := range acts {
				am, _ := a.(map[string]any)
				if am["type"] == "Action.OpenUrl" {
					if u, _ := am["url"].(string); !strings.HasPrefix(u, "http") {
						return http.StatusBadRequest, "an OpenUrl action without a URL", nil
					}
				}
			}
		}
		return http.StatusAccepted, "", &Received{Body: msg}
	})
}

// Tolerance is how old a webhook's signature timestamp may be, as a careful receiver checks.
const Tolerance = 5 * time.Minute

// Webhook starts a fake webhook receiver on addr ("": any free port on 127.0.0.1) that checks
// X-Verdict-Signature exactly as the documentation tells receivers to: t and v1 read from the
// header, the HMAC-SHA256 of "<t>.<raw body>" under secret compared in constant time, t within
// Tolerance of now; and that the body is a JSON event whose id and type are the headers'. It
// answers 401 to a bad signature, else 200 (or what Answer says).
func Webhook(t testing.TB, addr, secret string) *Receiver {
	return start(t, addr, func(r *http.Request, body []byte) (int, string, *Received) {
		if err := Verify(secret, r.Header.Get("X-Verdict-Signature"), body, time.Now()); err != nil {
			return http.StatusUnauthorized, err.Error(), nil
		}
		var ev map[string]any
		if json.Unmarshal(body, &ev) != nil {
			return http.StatusBadRequest, "the body is not JSON", nil
		}
		id, typ := r.Header.Get("X-Verdict-Event-Id"), r.Header.Get("X-Verdict-Event")
		if id == "" || ev["id"] != id || ev["type"] != typ {
			return http.StatusBadRequest, "the event's id and type are not its headers'", nil
		}
		return http.StatusOK, "", &Received{EventID: id, Event: typ, Body: ev}
	})
}

// Verify checks a webhook's X-Verdict-Signature header as a receiver does.
func Verify(secret, header string, body []byte, now time.Time) error {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("malformed signature header %q", header)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > Tolerance || d < -Tolerance {
		return fmt.Errorf("signature timestamp out of tolerance")
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := mac.Sum(nil)
	got, err := hex.DecodeString(sig)
	if err != nil || !hmac.Equal(got, want) {
		return fmt.Errorf("signature mismatch")
	}
	return nil
}
