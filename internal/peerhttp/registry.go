package peerhttp

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Registry keeps the runners the runner routes heard from, so that every replica lists every
// runner (app shares it through Redis); the default keeps this replica's callers in memory.
type Registry interface {
	// Heard records r, as of r.LastSeenAt, for the runner process instance. taken: another
	// instance of the same name was heard since heldSince, so the name is in use.
	Heard(ctx context.Context, r Runner, instance string, heldSince time.Time) (taken bool, err error)
	// List returns the runners last heard at or after since, by name.
	List(ctx context.Context, since time.Time) ([]Runner, error)
}

// RunnerRecord is what a Registry keeps of a runner.
type RunnerRecord struct {
	Runner   Runner `json:"runner"`
	Instance string `json:"instance"`
}

// Takes tells whether a runner instance heard at now may not use rec's name: another instance
// holds it, heard since heldSince.
func (rec RunnerRecord) Takes(instance string, heldSince time.Time) bool {
	return rec.Instance != "" && instance != "" && rec.Instance != instance && !rec.Runner.LastSeenAt.Before(heldSince)
}

// memoryRegistry is the Registry of one replica.
type memoryRegistry struct {
	mu      sync.Mutex
	runners map[string]RunnerRecord // by name
}

func newMemoryRegistry() *memoryRegistry {
	return &memoryRegistry{runners: map[string]RunnerRecord{}}
}

func (m *memoryRegistry) Heard(_ context.Context, r Runner, instance string, heldSince time.Time) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if old, ok := m.runners[r.Name]; ok && old.Takes(instance, heldSince) {
		return true, nil
	}
	m.runners[r.Name] = RunnerRecord{Runner: r, Instance: instance}
	return false, nil
}

func (m *memoryRegistry) List(_ context.Context, since time.Time) ([]Runner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []Runner{}
	for name, rec := range m.runners {
		if rec.Runner.LastSeenAt.Before(since) {
			delete(m.runners, name)
			continue
		}
		out = append(out, rec.Runner)
	}
	SortRunners(out)
	return out, nil
}

// SortRunners orders a list by name.
func SortRunners(rs []Runner) {
	sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
}
