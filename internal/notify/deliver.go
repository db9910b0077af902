package notify

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"verdict/internal/domain"
	"verdict/internal/egress"
	"verdict/internal/mail"
	"verdict/internal/redact"
	"verdict/internal/store"
)

// Headers of a webhook's request.
const (
	HeaderSignature = "X-Verdict-Signature" // t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">
	HeaderEventID   = "X-Verdict-Event-Id"
	HeaderEvent     = "X-Verdict-Event"
)

// Sign is the X-Verdict-Signature of body sent at t with secret: "t=<unix>,v1=<hex of
// HMAC-SHA256(secret, "<unix>.<body>")>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Deliver makes one attempt of the delivery the payload names (the outbox worker calls it,
// control.Deliverer) and records its outcome. A delivery that is gone (its notification
// deleted, or past the newest kept) or delivered already is not made. A 2xx answer delivers it;
// a 4xx other than 408 and 429 fails it for good (mail.Permanent); anything else (5xx, 408,
// 429, a timeout, a refused connection) is an error the outbox retries, until the next try
// would fall past the retry window, when it fails for good too.
func (s *Service) Deliver(ctx context.Context, payload string) error {
	orgID, nid, did, err := splitPayload(payload)
	if err != nil {
		return mail.Permanent(err)
	}
	repo := s.store.Notifications()
	d, err := repo.Delivery(ctx, orgID, did)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if d.NotificationID != nid || d.Status != domain.DeliveryPending {
		return nil // delivered (or failed) already: an outbox row repeated after its outcome was recorded
	}
	n, err := repo.Get(ctx, orgID, nid)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	rawURL, err := s.box.Open(n.URLCipher)
	if err != nil {
		return mail.Permanent(fmt.Errorf("notify: cannot open the sealed URL (was ENCRYPTION_KEY changed?)"))
	}
	var secret []byte
	if n.SecretCipher != "" {
		if secret, err = s.box.Open(n.SecretCipher); err != nil {
			return mail.Permanent(fmt.Errorf("notify: cannot open the sealed secret (was ENCRYPTION_KEY changed?)"))
		}
	}

	start := s.clock()
	code, callErr := s.call(ctx, n, string(rawURL), string(secret), d)
	took := s.clock().Sub(start)
	if ctx.Err() != nil && callErr != nil {
		return callErr // shutdown: the outbox puts it back; no attempt recorded
	}
	now := s.clock()
	d.Attempts++
	d.StatusCode, d.DurationMs, d.LastAttemptAt = code, took.Milliseconds(), &now
	var out error
	switch {
	case callErr == nil:
		d.Status, d.LastError, d.DeliveredAt = domain.DeliveryDelivered, "", &now
	case code >= 400 && code < 500 && code != http.StatusRequestTimeout && code != http.StatusTooManyRequests:
		d.Status, d.LastError = domain.DeliveryFailed, callErr.Error()
		out = mail.Permanent(callErr)
	case now.Add(s.retry.Backoff(d.Attempts)).Sub(d.CreatedAt) > s.retry.Window && s.retry.Window > 0:
		d.Status, d.LastError = domain.DeliveryFailed, callErr.Error()+" (given up: retried for "+s.retry.Window.String()+")"
		out = mail.Permanent(callErr)
	default:
		d.LastError = callErr.Error()
		out = callErr
	}
	// The outcome is recorded even when shutdown began during the call.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := repo.UpdateDelivery(rctx, d); err != nil && !errors.Is(err, store.ErrNotFound) {
		if out == nil {
			// Delivered, but not recorded: the outbox makes it again, which the receiver dedupes by
			// its event ID.
			s.log.Warn("notification delivered but not recorded", "notification", n.ID, "delivery", d.ID, "err", err)
		}
		return errors.Join(out, err)
	}
	return out
}

// call posts d's body to the receiver and returns its status code (0: no answer) and an error
// for anything but a 2xx, worded without the URL or the secret.
func (s *Service) call(ctx context.Context, n *domain.Notification, rawURL, secret string, d *domain.Delivery) (int, error) {
	body := []byte(d.Body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, strings.NewReader(d.Body))
	if err != nil {
		return 0, errors.New("the receiver's URL is not valid")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "Verdict-Notifications/1")
	if n.Kind == domain.NotifyWebhook {
		req.Header.Set(HeaderEventID, d.EventID)
		req.Header.Set(HeaderEvent, d.Event)
		if secret != "" {
			req.Header.Set(HeaderSignature, Sign(secret, s.clock(), body))
		}
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, errors.New(s.callError(err, rawURL, secret))
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, nil
	}
	msg := fmt.Sprintf("HTTP %d", resp.StatusCode)
	if a := redact.Clean(redact.Clean(string(answer), rawURL), secret); a != "" {
		msg += ": " + a
	}
	return resp.StatusCode, errors.New(clipRunes(msg, maxErrorText))
}

// callError words a failed call without the receiver's URL (whose path is its credential) or
// the secret.
func (s *Service) callError(err error, rawURL, secret string) string {
	var ue interface{ Timeout() bool }
	switch {
	case errors.Is(err, egress.ErrRefused):
		return "refused: the receiver's address is internal (loopback, private, link-local or reserved)"
	case errors.As(err, &ue) && ue.Timeout():
		return "timed out: no answer within " + s.client.Timeout.String()
	}
	// *url.Error carries the URL: keep only what it wraps.
	var uerr interface{ Unwrap() error }
	if errors.As(err, &uerr) && uerr.Unwrap() != nil {
		err = uerr.Unwrap()
	}
	return clipRunes(redact.Clean(redact.Clean(err.Error(), rawURL), secret), maxErrorText)
}
