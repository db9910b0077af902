package sqlstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"verdict/internal/domain"
)

// On PostgreSQL every replica keeps the users it reads and the pages of the run list, like a
// SQLite store does, while it hears of every write to them: triggers notify a channel when a
// transaction that wrote users (migration 00029: verdict_users) or an organization's runs
// (migration 00033: verdict_runs, the organization's ID as payload) commits, and writeFeed
// listens on a connection of its own and bumps the generation of what was written
// (readcache.go) at each notification. The replica that writes bumps it itself as well, at
// once. So another replica drops what it kept as soon as the notification reaches it, about a
// millisecond after the commit; a read already under way when it arrives is not kept.
//
// A page of runs is served from memory only after caughtUp: a round trip on the feed's own
// connection, begun after the read was asked for. PostgreSQL signals the listeners of a
// transaction's notifications as the transaction commits, before its client hears that it has,
// and a listening backend sends what it was signalled before it answers the next query on its
// connection. So a write that had committed when the read began has bumped the generation by
// the time caughtUp returns, and another replica's write is seen on the very next read. One
// round trip serves every read that waited for it: under load, the reads of a round share it.
// Users are read on every request and are not waited for: their changes are seen within the
// notification's delay.
//
// What is kept counts only while the feed listens: from when it has heard a notification it
// sent itself after its LISTEN (a pooler that hands each statement to another server session
// delivers none), and never after the listening connection failed or stopped answering (a
// notification may have been lost then). Until it listens again every read goes to the database, and it bumps the generations
// once more when it does: what was written meanwhile is not served from before.

const (
	usersChannel = "verdict_users"
	runsChannel  = "verdict_runs"
	// feedName is the feed connection's application_name, as pg_stat_activity shows it.
	feedName = "verdict-feed"
	// feedCheck is how long the feed waits for a notification before it makes sure its
	// connection still answers: the longest a silently broken connection (a network partition,
	// not a closed socket) can leave this replica serving users another replica changed.
	feedCheck = 5 * time.Second
	// feedRetry is the wait before listening again after the connection failed.
	feedRetry = time.Second
)

// probeStatement is the statement by which the feed notifies itself (tests stand in a pooler
// that drops notifications).
var probeStatement = func(channel string) string { return "NOTIFY " + channel }

// writeFeed listens for writes to users and runs on PostgreSQL; see above.
type writeFeed struct {
	dsn   string
	gens  *tableGens
	probe func(channel string) string // probeStatement when the feed started

	listening atomic.Bool
	stop      context.CancelFunc
	done      sync.WaitGroup

	mu      sync.Mutex
	waiting []chan bool   // caughtUp's callers for the next round trip
	wake    chan struct{} // a caller is waiting (holds one)
}

// startWriteFeed listens on its own connection until close; the caches count once it listens.
func startWriteFeed(dsn string, gens *tableGens) *writeFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &writeFeed{dsn: dsn, gens: gens, probe: probeStatement, stop: cancel, wake: make(chan struct{}, 1)}
	f.done.Add(1)
	go func() {
		defer f.done.Done()
		for ctx.Err() == nil {
			f.listen(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(feedRetry):
			}
		}
	}()
	return f
}

// live reports whether the feed listens: whether what is kept may be served.
func (f *writeFeed) live() bool { return f != nil && f.listening.Load() }

// caughtUp returns true once every notification of a transaction that committed before the
// call has bumped its generation: after a round trip on the feed's connection that began after
// the call. False when the feed cannot tell (it does not listen, its connection failed, ctx
// ended): then nothing kept may be served.
func (f *writeFeed) caughtUp(ctx context.Context) bool {
	if f == nil {
		return false
	}
	done := make(chan bool, 1)
	f.mu.Lock()
	if !f.listening.Load() { // read under mu: the feed stops listening and answers under it
		f.mu.Unlock()
		return false
	}
	f.waiting = append(f.waiting, done)
	f.mu.Unlock()
	select {
	case f.wake <- struct{}{}:
	default:
	}
	select {
	case ok := <-done:
		return ok
	case <-ctx.Done():
		return false
	}
}

// deaf stops counting what is kept and tells the callers waiting for a round that none comes.
func (f *writeFeed) deaf() {
	f.mu.Lock()
	f.listening.Store(false)
	batch := f.waiting
	f.waiting = nil
	f.mu.Unlock()
	f.bumpAll()
	for _, c := range batch {
		c <- false
	}
}

// heard bumps the generation of what a notification says was written.
func (f *writeFeed) heard(n *pgconn.Notification) {
	switch {
	case n.Channel == usersChannel:
		f.gens.users.Add(1)
	case n.Channel == runsChannel && n.Payload != "" && n.Payload != "*":
		f.gens.wroteRuns(n.Payload)
	default: // runs of every organization
		f.gens.executions.Add(1)
	}
}

// listen connects, listens and bumps the generations at each notification, and makes the round
// trips caughtUp's callers wait for, until the connection fails or ctx ends.
func (f *writeFeed) listen(ctx context.Context) {
	cfg, err := pgconn.ParseConfig(f.dsn)
	if err != nil {
		return
	}
	cfg.RuntimeParams["application_name"] = feedName
	// The feed proves it hears before it counts: through a pooler that hands each statement to
	// another server session (PgBouncer's transaction mode) it would hear nothing, and serve
	// what it keeps for ever. It listens on a channel of its own and notifies it.
	probe := "verdict_feed_" + domain.RandomHex(8)
	var heardProbe atomic.Bool
	cfg.OnNotification = func(_ *pgconn.PgConn, n *pgconn.Notification) {
		if n.Channel == probe {
			heardProbe.Store(true)
			return
		}
		f.heard(n)
	}
	connect, cancel := context.WithTimeout(ctx, feedCheck)
	conn, err := pgconn.ConnectConfig(connect, cfg)
	cancel()
	if err != nil {
		return
	}
	defer func() {
		closing, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = conn.Close(closing) // a connection that stopped answering is not waited for
	}()
	if err := conn.Exec(ctx, "LISTEN "+usersChannel+"; LISTEN "+runsChannel+"; LISTEN "+probe).Close(); err != nil {
		return
	}
	if err := conn.Exec(ctx, f.probe(probe)).Close(); err != nil {
		return
	}
	for deadline := time.Now().Add(feedCheck); !heardProbe.Load(); {
		wait, cancel := context.WithDeadline(ctx, deadline)
		err := conn.WaitForNotification(wait)
		cancel()
		if err != nil && !heardProbe.Load() {
			return // not heard in feedCheck, or the connection failed: try again later
		}
	}
	if err := conn.Exec(ctx, "UNLISTEN "+probe).Close(); err != nil {
		return
	}
	// Writes made while nobody listened were not heard: nothing read before counts.
	f.bumpAll()
	f.listening.Store(true)
	defer f.deaf()
	for {
		// The callers waiting now asked before this round trip begins: it answers them.
		f.mu.Lock()
		batch := f.waiting
		f.waiting = nil
		f.mu.Unlock()
		if len(batch) > 0 {
			round, cancel := context.WithTimeout(ctx, feedCheck)
			err := conn.Ping(round) // notifications signalled before it arrive first
			cancel()
			for _, c := range batch {
				c <- err == nil
			}
			if err != nil {
				return
			}
			continue
		}
		if !f.idle(ctx, conn) {
			return
		}
	}
}

// idle waits on conn for a notification, a caller of caughtUp or feedCheck, whichever comes
// first, and makes sure after feedCheck that conn still answers; false when it does not.
func (f *writeFeed) idle(ctx context.Context, conn *pgconn.PgConn) bool {
	wait, cancel := context.WithTimeout(ctx, feedCheck)
	var woken atomic.Bool
	go func() {
		select {
		case <-f.wake:
			woken.Store(true)
			cancel()
		case <-wait.Done():
		}
	}()
	err := conn.WaitForNotification(wait)
	cancel()
	switch {
	case ctx.Err() != nil:
		return false
	case err == nil, woken.Load():
		return true
	case pgconn.Timeout(err):
		ping, cancel := context.WithTimeout(ctx, feedCheck)
		defer cancel()
		return conn.Ping(ping) == nil
	}
	return false
}

func (f *writeFeed) bumpAll() {
	f.gens.users.Add(1)
	f.gens.executions.Add(1)
}

// close stops listening and waits for the feed's goroutine.
func (f *writeFeed) close() {
	if f != nil {
		f.stop()
		f.done.Wait()
	}
}
