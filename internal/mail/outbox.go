package mail

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	netmail "net/mail"
	"strings"
	"sync"
	"time"

	"verdict/internal/domain"
	"verdict/internal/store"
)

// Retry policy of the outbox.
const (
	RetryBase        = 30 * time.Second // delay after the first failure, doubled after each one
	RetryMax         = time.Hour        // cap of the delay
	MaxAttempts      = 10               // attempts before a mail is given up, about 3 h after the first
	maxErrorTextSize = 1000             // of the error recorded on the row
)

// Enqueue stores msg in the outbox, due at now. Call it with the repository of the
// transaction that makes the change causing the mail, so the mail exists exactly when the
// change commits; then Notify the worker after the commit.
func Enqueue(ctx context.Context, repo store.OutboxRepo, msg Message, now time.Time) error {
	if err := msg.Validate(); err != nil {
		return err
	}
	m := &store.Mail{ // the repository assigns the ID
		To:          append([]string(nil), msg.To...),
		Subject:     msg.Subject,
		HTML:        msg.HTML,
		Text:        msg.Text,
		NextAttempt: now,
		CreatedAt:   now,
	}
	if err := repo.Enqueue(ctx, m); err != nil {
		return fmt.Errorf("mail: enqueue: %w", err)
	}
	return nil
}

// Backoff is the delay before the next try after the n-th failed attempt (n ≥ 1):
// RetryBase × 2^(n-1), capped at RetryMax.
func Backoff(n int) time.Duration { return MailRetry.Backoff(n) }

// RetryPolicy is how the outbox retries the failed attempts of one kind of delivery.
type RetryPolicy struct {
	Base time.Duration // delay after the first failure, doubled after each one
	Max  time.Duration // cap of the delay
	// MaxAttempts gives up after that many attempts; 0: no bound by count.
	MaxAttempts int
	// Window gives up on a failure that comes that long after the delivery was enqueued; 0: no
	// bound by time.
	Window time.Duration
}

// MailRetry is the policy of e-mails, and of every kind without one of its own.
var MailRetry = RetryPolicy{Base: RetryBase, Max: RetryMax, MaxAttempts: MaxAttempts}

// Backoff is the delay before the next try after the n-th failed attempt (n ≥ 1): Base ×
// 2^(n-1), capped at Max.
func (p RetryPolicy) Backoff(n int) time.Duration {
	d := p.Base
	for i := 1; i < n; i++ {
		d *= 2
		if d >= p.Max {
			return p.Max
		}
	}
	return min(d, p.Max)
}

// giveUp tells whether a delivery enqueued at created fails for good with its attempt-th
// attempt, the next one being due at next.
func (p RetryPolicy) giveUp(attempt int, created, next time.Time) bool {
	if p.MaxAttempts > 0 && attempt >= p.MaxAttempts {
		return true
	}
	return p.Window > 0 && next.Sub(created) > p.Window
}

// Permanent marks a Deliverer's error as one that no retry can mend (the receiver refused the
// request: a 4xx answer): the delivery is given up at once.
func Permanent(err error) error { return permanentError{err} }

type permanentError struct{ err error }

func (e permanentError) Error() string { return e.err.Error() }
func (e permanentError) Unwrap() error { return e.err }

// IsPermanent tells whether err was marked by Permanent.
func IsPermanent(err error) bool {
	var p permanentError
	return errors.As(err, &p)
}

// Worker sends the outbox: it claims due mails with a lease (so replicas never send one
// twice while it is in flight), sends each, and records success or schedules a retry.
// A Worker must not be copied after first use.
type Worker struct {
	Repo   store.OutboxRepo
	Sender Sender
	// Deliverers make the outbox's deliveries other than e-mails, by store.Mail.Kind (the
	// post-run steps' deliveries, control.Deliveries), with the payload the step enqueued. A
	// failure is retried like a mail's (Backoff, MaxAttempts); a kind no Deliverer makes fails
	// its attempt.
	Deliverers map[string]func(ctx context.Context, payload string) error
	// Policies retry each kind's failures; a kind not named, and e-mails, retry as MailRetry.
	Policies map[string]RetryPolicy
	// Lanes name, by kind, the lane of a delivery from its payload (its receiver): a lane has
	// at most LaneParallel deliveries in flight, so one slow or dead receiver holds at most
	// that many of the Parallel slots, and the others' deliveries pass it. A delivery claimed
	// while its lane is full is put back (Repo.Defer, its attempt not counted), due when the
	// lane should have room by its recent pace (a few are queued in memory behind the lane's
	// deliveries in flight first). A kind not named is one lane.
	Lanes  map[string]func(payload string) string
	Clock  domain.Clock // nil: domain.SystemClock
	Logger *slog.Logger // nil: discard

	// Zero values take the defaults in brackets.
	PollInterval time.Duration // how often to look for due mails [1s]
	SendTimeout  time.Duration // per message [1m]
	Lease        time.Duration // how long a claimed mail is hidden from other workers [SendTimeout×BatchSize + 1m]
	BatchSize    int           // mails claimed at once [10]
	// Deliveries (Kind != "") are made concurrently, e-mails one after the other.
	Parallel     int // deliveries in flight at once [16]
	LaneParallel int // deliveries of one lane in flight at once [4]

	once     sync.Once
	wake     chan struct{}
	slots    chan struct{} // one token per delivery in flight
	inflight sync.WaitGroup
	mu       sync.Mutex
	lanes    map[string]*lane
}

// lane is what the worker knows of one lane: its deliveries in flight, their recent pace and
// when the last delivery it put back falls due.
type lane struct {
	busy     int
	queue    []store.Mail  // claimed while the lane was busy, made by its deliveries in flight
	pace     time.Duration // moving average of an attempt's duration
	deferred time.Time
}

func (w *Worker) init() {
	w.once.Do(func() {
		w.wake = make(chan struct{}, 1)
		w.slots = make(chan struct{}, w.parallel())
		w.lanes = map[string]*lane{}
	})
}

// Notify wakes Run at once, e.g. after a transaction that enqueued a mail committed.
// It never blocks.
func (w *Worker) Notify() {
	w.init()
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// Run sends due mails until ctx ends, polling every PollInterval and whenever notified.
// Errors are logged, never returned: the outbox is retried on the next round.
func (w *Worker) Run(ctx context.Context) {
	w.init()
	t := time.NewTicker(w.pollInterval())
	defer t.Stop()
	for {
		// Drain whole batches so a burst goes out without waiting a tick per batch; claim no
		// more than the free delivery slots take, so nothing claimed waits behind a slow one.
		for {
			free := cap(w.slots) - len(w.slots)
			if free == 0 {
				break // a finished delivery wakes the loop
			}
			n, err := w.round(ctx, min(free, w.batchSize()))
			if err != nil {
				if ctx.Err() == nil {
					w.logger().Error("mail outbox: claim failed", "error", err)
				}
				break
			}
			// A round that only put deliveries back goes on too: a long backlog of one receiver
			// is put back at its pace in one pass, so what is due behind it is claimed at once.
			if n < min(free, w.batchSize()) {
				break
			}
		}
		select {
		case <-ctx.Done():
			w.inflight.Wait()
			return
		case <-t.C:
		case <-w.wake:
		}
	}
}

// RunOnce claims one batch of due mails and tries each once, waiting for the deliveries it
// started. It returns how many it claimed; its error is only a failure to claim.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	w.init()
	n, err := w.round(ctx, w.batchSize())
	w.inflight.Wait()
	return n, err
}

// round claims up to n due mails, sends the e-mails and starts the deliveries (each in a
// slot, within its lane, or queued behind it, or put back when both are full). It returns how
// many it claimed.
func (w *Worker) round(ctx context.Context, n int) (int, error) {
	now := w.now()
	mails, err := w.Repo.Claim(ctx, now, now.Add(w.lease()), n)
	if err != nil {
		return 0, fmt.Errorf("mail: claim: %w", err)
	}
	for i, m := range mails {
		if ctx.Err() != nil {
			w.release(ctx, mails[i:])
			break
		}
		if m.Kind == "" {
			w.deliver(ctx, m)
			continue
		}
		name := w.laneOf(m)
		switch w.enter(name, m) {
		case laneFull:
			w.putBack(ctx, m, name)
			continue
		case laneQueued:
			continue // made by the lane's delivery in flight when it is done
		}
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			w.release(ctx, append(w.leave(name, 0, true), m))
			w.release(ctx, mails[i+1:])
			return len(mails), nil
		}
		w.inflight.Add(1)
		go func() {
			defer w.inflight.Done()
			w.serve(ctx, name, m)
			<-w.slots
			w.Notify() // a slot is free: claim again
		}()
	}
	return len(mails), nil
}

// serve makes m, then the deliveries its lane queued meanwhile, in one place of the lane and
// one slot; on shutdown it releases what is left queued.
func (w *Worker) serve(ctx context.Context, name string, m store.Mail) {
	for {
		start := time.Now()
		w.deliver(ctx, m)
		took := time.Since(start)
		if ctx.Err() != nil {
			w.release(ctx, w.leave(name, took, true))
			return
		}
		next, ok := w.next(name, took)
		if !ok {
			return
		}
		m = next
	}
}

// Outcomes of enter.
const (
	laneEntered = iota // a place was taken: make it now
	laneQueued         // the lane is busy: queued, made by one of its deliveries in flight
	laneFull           // the lane and its queue are full: put it back
)

// enter takes a place in lane name for m, or queues m behind the lane's deliveries in flight
// (at most 4 × LaneParallel: claimed and leased, they wait in memory a few of the lane's
// attempts at most, far within the lease).
func (w *Worker) enter(name string, m store.Mail) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lanes[name]
	if l == nil {
		l = &lane{pace: time.Second}
		w.lanes[name] = l
	}
	switch {
	case l.busy < w.laneParallel():
		l.busy++
		return laneEntered
	case len(l.queue) < 4*w.laneParallel():
		l.queue = append(l.queue, m)
		return laneQueued
	}
	return laneFull
}

// next is the next delivery lane name queued, after an attempt that took took; false when
// none is (the place is given back).
func (w *Worker) next(name string, took time.Duration) (store.Mail, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lanes[name]
	l.pace = (3*l.pace + took) / 4
	if len(l.queue) > 0 {
		m := l.queue[0]
		l.queue = l.queue[1:]
		return m, true
	}
	w.leaveLocked(name, l)
	return store.Mail{}, false
}

// leave gives back a place in lane name after an attempt that took took (0: none made); with
// all, it also takes the lane's queue, returned for release.
func (w *Worker) leave(name string, took time.Duration, all bool) []store.Mail {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.lanes[name]
	if took > 0 {
		l.pace = (3*l.pace + took) / 4
	}
	var queued []store.Mail
	if all {
		queued, l.queue = l.queue, nil
	}
	w.leaveLocked(name, l)
	return queued
}

func (w *Worker) leaveLocked(name string, l *lane) {
	l.busy--
	if l.busy == 0 && len(l.queue) == 0 && l.deferred.Before(w.now()) {
		delete(w.lanes, name) // an idle lane costs nothing
	}
}

// putBack makes m, claimed while its lane and its queue were full, due again when the lane
// should have room: after what is queued and in flight at the lane's pace, and half a pace
// (divided among its places) after the previous one put back, so a long backlog of one
// receiver comes back about as fast as it is served, not all at once.
func (w *Worker) putBack(ctx context.Context, m store.Mail, name string) {
	w.mu.Lock()
	l := w.lanes[name]
	if l == nil { // emptied meanwhile
		l = &lane{pace: time.Second}
		w.lanes[name] = l
	}
	places := time.Duration(w.laneParallel())
	// Twice the lane's pace: those that come due while it is busy wait in its queue, so a
	// place that frees finds one there rather than idling until the next claim.
	step := max(l.pace/(2*places), 10*time.Millisecond)
	next := w.now().Add(time.Duration(len(l.queue)+l.busy) * l.pace / places)
	if l.deferred.After(next) {
		next = l.deferred
	}
	next = next.Add(step)
	l.deferred = next
	w.mu.Unlock()
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := w.Repo.Defer(dbCtx, m.ID, next); err != nil {
		w.logger().Warn("mail outbox: putting back a delivery failed; it is retried when its lease ends",
			"mail_id", m.ID, "kind", m.Kind, "error", err)
	}
}

// release makes leased mails due again at once when shutdown interrupts them, so another
// replica (or the next start) sends them without waiting for the lease to run out.
func (w *Worker) release(ctx context.Context, mails []store.Mail) {
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	for _, m := range mails {
		if err := w.Repo.MarkFailed(dbCtx, m.ID, "interrupted: mail worker stopped", w.now(), false); err != nil {
			w.logger().Warn("mail outbox: releasing a claimed mail failed; it is retried when its lease ends",
				"mail_id", m.ID, "error", err)
		}
	}
}

func (w *Worker) deliver(ctx context.Context, m store.Mail) {
	what := "mail"
	log := w.logger().With("mail_id", m.ID, "recipients", len(m.To))
	if m.Kind != "" {
		what, log = "delivery", w.logger().With("mail_id", m.ID, "kind", m.Kind)
	}
	sendCtx, cancel := context.WithTimeout(ctx, w.sendTimeout())
	err := w.send(sendCtx, m)
	cancel()
	// Record the outcome even when shutdown began during the send, so a delivered mail is
	// not sent again.
	dbCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err == nil {
		if err := w.Repo.MarkSent(dbCtx, m.ID, w.now()); err != nil {
			// The mail went out but stays unsent in the outbox: it is sent again after the
			// lease. At least once is the price of not holding a transaction over SMTP.
			log.Error("mail outbox: sent but not marked sent", "error", err)
			return
		}
		log.Info(what+" sent", "attempt", m.Attempts)
		return
	}
	if ctx.Err() != nil {
		w.release(ctx, []store.Mail{m}) // interrupted by shutdown, not the mail's fault
		return
	}
	// Claim counted this attempt already, so a sender that crashed mid-send used one up too.
	attempt := m.Attempts
	policy := w.policy(m.Kind)
	now := w.now()
	next := now.Add(policy.Backoff(attempt))
	giveUp := IsPermanent(err) || policy.giveUp(attempt, m.CreatedAt, next)
	errText := truncate(redactRecipients(err.Error(), m.To), maxErrorTextSize)
	if merr := w.Repo.MarkFailed(dbCtx, m.ID, errText, next, giveUp); merr != nil {
		log.Error("mail outbox: recording a failed attempt failed", "error", merr, "send_error", errText)
		return
	}
	if giveUp {
		log.Error(what+" given up", "attempt", attempt, "error", errText)
		return
	}
	log.Warn(what+" send failed; will retry", "attempt", attempt, "next_attempt", next, "error", errText)
}

// send makes one attempt: an e-mail through the Sender, another kind through its Deliverer.
func (w *Worker) send(ctx context.Context, m store.Mail) error {
	if m.Kind == "" {
		return w.Sender.Send(ctx, Message{To: m.To, Subject: m.Subject, HTML: m.HTML, Text: m.Text})
	}
	d := w.Deliverers[m.Kind]
	if d == nil {
		return fmt.Errorf("no deliverer for %q in this process", m.Kind)
	}
	return d(ctx, m.Text)
}

// redactRecipients replaces the addresses that relays like to echo in rejections
// ("550 <ann@example.com>: unknown user") with their position, so the log names no one.
func redactRecipients(s string, to []string) string {
	for i, addr := range to {
		if a, err := netmail.ParseAddress(addr); err == nil {
			addr = a.Address // relays echo the bare address, not "Name <address>"
		}
		if addr != "" {
			s = strings.ReplaceAll(s, addr, fmt.Sprintf("recipient-%d", i+1))
		}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 { // do not cut a UTF-8 sequence
		n--
	}
	return s[:n] + "…"
}

// policy is how kind's failures are retried.
func (w *Worker) policy(kind string) RetryPolicy {
	if p, ok := w.Policies[kind]; ok && kind != "" {
		return p
	}
	return MailRetry
}

func (w *Worker) now() time.Time {
	if w.Clock != nil {
		return w.Clock()
	}
	return domain.SystemClock()
}

func (w *Worker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func (w *Worker) pollInterval() time.Duration {
	if w.PollInterval > 0 {
		return w.PollInterval
	}
	return time.Second
}

func (w *Worker) sendTimeout() time.Duration {
	if w.SendTimeout > 0 {
		return w.SendTimeout
	}
	return time.Minute
}

func (w *Worker) parallel() int {
	if w.Parallel > 0 {
		return w.Parallel
	}
	return 16
}

func (w *Worker) laneParallel() int {
	if w.LaneParallel > 0 {
		return w.LaneParallel
	}
	return 4
}

func (w *Worker) batchSize() int {
	if w.BatchSize > 0 {
		return w.BatchSize
	}
	return 10
}

func (w *Worker) lease() time.Duration {
	if w.Lease > 0 {
		return w.Lease
	}
	// Long enough for the whole batch to time out one by one: a mail must not be claimed
	// by another replica while this one may still be sending it.
	return w.sendTimeout()*time.Duration(w.batchSize()) + time.Minute
}

// laneOf is the lane of delivery m: its kind and what the kind's Lanes function names.
func (w *Worker) laneOf(m store.Mail) string {
	if f := w.Lanes[m.Kind]; f != nil {
		return m.Kind + "/" + f(m.Text)
	}
	return m.Kind
}
