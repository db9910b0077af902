package sqlstore

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// On PostgreSQL every replica keeps the users it reads, like a SQLite store does, while it
// hears of every write to users: a trigger (migration 00029) notifies the channel
// verdict_users when a transaction that wrote users commits, and userFeed listens on a
// connection of its own and bumps the users' generation (readcache.go) at each notification.
// The replica that writes bumps it itself as well, at once. So another replica drops what it
// kept as soon as the notification reaches it, about a millisecond after the commit; a read
// already under way when it arrives is not kept.
//
// What is kept counts only while the feed listens: from the first LISTEN on, and never after
// the listening connection failed or stopped answering (a notification may have been lost
// then). Until it listens again every read goes to the database, and it bumps the generation
// once more when it does: what was written meanwhile is not served from before.

const (
	usersChannel = "verdict_users"
	// feedCheck is how long the feed waits for a notification before it makes sure its
	// connection still answers: the longest a silently broken connection (a network partition,
	// not a closed socket) can leave this replica serving users another replica changed.
	feedCheck = 5 * time.Second
	// feedRetry is the wait before listening again after the connection failed.
	feedRetry = time.Second
)

// userFeed listens for writes to users on PostgreSQL; see above.
type userFeed struct {
	dsn  string
	gens *tableGens

	listening atomic.Bool
	stop      context.CancelFunc
	done      sync.WaitGroup
}

// startUserFeed listens on its own connection until close; the cache counts once it listens.
func startUserFeed(dsn string, gens *tableGens) *userFeed {
	ctx, cancel := context.WithCancel(context.Background())
	f := &userFeed{dsn: dsn, gens: gens, stop: cancel}
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
func (f *userFeed) live() bool { return f != nil && f.listening.Load() }

// listen connects, listens and bumps the generation at each notification until the
// connection fails or ctx ends.
func (f *userFeed) listen(ctx context.Context) {
	cfg, err := pgconn.ParseConfig(f.dsn)
	if err != nil {
		return
	}
	cfg.OnNotification = func(*pgconn.PgConn, *pgconn.Notification) { f.gens.users.Add(1) }
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
	if err := conn.Exec(ctx, "LISTEN "+usersChannel).Close(); err != nil {
		return
	}
	// Writes made while nobody listened were not heard: nothing read before counts.
	f.gens.users.Add(1)
	f.listening.Store(true)
	defer func() {
		f.listening.Store(false)
		f.gens.users.Add(1)
	}()
	for {
		wait, cancel := context.WithTimeout(ctx, feedCheck)
		err := conn.WaitForNotification(wait)
		cancel()
		switch {
		case ctx.Err() != nil:
			return
		case err == nil:
		case pgconn.Timeout(err):
			ping, cancel := context.WithTimeout(ctx, feedCheck)
			err := conn.Ping(ping)
			cancel()
			if err != nil {
				return
			}
		default:
			return
		}
	}
}

// close stops listening and waits for the feed's goroutine.
func (f *userFeed) close() {
	if f != nil {
		f.stop()
		f.done.Wait()
	}
}
