package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"verdict/internal/domain"
)

// gcSlack is added to a key's Redis TTL. The TTL only collects garbage: expiry is decided
// against the injected clock, so a little clock skew between replicas and Redis must not
// delete a live window early.
const gcSlack = time.Minute

// hitScript keeps a counter as a hash {n, r}: r is the window end in Unix ms. A window whose
// end is <= now (the caller's clock, ARGV[1]) is over and starts again at 1.
var hitScript = redis.NewScript(`
local now = tonumber(ARGV[1])
local r = tonumber(redis.call('HGET', KEYS[1], 'r'))
if r == nil or r <= now then
	r = now + tonumber(ARGV[2])
	redis.call('HSET', KEYS[1], 'n', 1, 'r', r)
	redis.call('PEXPIRE', KEYS[1], ARGV[3])
	return {1, r}
end
return {redis.call('HINCRBY', KEYS[1], 'n', 1), r}
`)

// RedisStore is the Store shared by replicas. Every key lives under prefix.
type RedisStore struct {
	client redis.UniversalClient
	prefix string
	clock  domain.Clock
}

// NewRedisStore returns a store keeping its counters in client under prefix (e.g. "verdict:rl:").
func NewRedisStore(client redis.UniversalClient, prefix string, clock domain.Clock) *RedisStore {
	return &RedisStore{client: client, prefix: prefix, clock: clock}
}

// Hit costs one round trip: EVALSHA, or EVAL once after a Redis restart flushed the script.
func (s *RedisStore) Hit(ctx context.Context, key string, window time.Duration) (Counter, error) {
	if err := checkWindow(window); err != nil {
		return Counter{}, err
	}
	now := s.clock().UnixMilli()
	ttl := (window + gcSlack).Milliseconds()
	res, err := hitScript.Run(ctx, s.client, []string{s.prefix + key}, now, window.Milliseconds(), ttl).Int64Slice()
	if err != nil {
		return Counter{}, fmt.Errorf("ratelimit: redis hit: %w", err)
	}
	if len(res) != 2 {
		return Counter{}, fmt.Errorf("ratelimit: redis hit: unexpected reply %v", res)
	}
	return Counter{N: int(res[0]), ResetAt: fromMillis(res[1])}, nil
}

func (s *RedisStore) Get(ctx context.Context, key string) (Counter, error) {
	now := s.clock().UnixMilli()
	vals, err := s.client.HMGet(ctx, s.prefix+key, "n", "r").Result()
	if err != nil {
		return Counter{}, fmt.Errorf("ratelimit: redis get: %w", err)
	}
	ns, ok1 := vals[0].(string)
	rs, ok2 := vals[1].(string)
	if !ok1 || !ok2 {
		return Counter{}, nil // absent
	}
	n, err1 := strconv.Atoi(ns)
	r, err2 := strconv.ParseInt(rs, 10, 64)
	if err1 != nil || err2 != nil {
		return Counter{}, fmt.Errorf("ratelimit: redis get: malformed counter %q", s.prefix+key)
	}
	if r <= now {
		return Counter{}, nil
	}
	return Counter{N: n, ResetAt: fromMillis(r)}, nil
}

func (s *RedisStore) Reset(ctx context.Context, key string) error {
	if err := s.client.Del(ctx, s.prefix+key).Err(); err != nil {
		return fmt.Errorf("ratelimit: redis reset: %w", err)
	}
	return nil
}
