package follow

import (
	"testing"
	"time"
)

func gone(f *Follower) bool {
	select {
	case <-f.Gone():
		return true
	default:
		return false
	}
}

// Ending an owner drops its followers at once, on this replica and, through the transport, on
// the others (EndLocal: here only); followers of other owners, and of the same run, stay; a
// closed follower leaves no trace in its owners.
func TestEndOwner(t *testing.T) {
	tr := &loop{}
	a := New(Options{Transport: tr, Origin: "a"})
	defer a.Close()
	b := New(Options{Transport: tr, Origin: "b"})
	defer b.Close()
	waitFor(t, "subscriptions", func() bool { return a.Stats().Upstream == 1 && b.Stats().Upstream == 1 })

	keyOnA := a.Follow("o", "r", "user:u1", "key:k1")
	sessionOnA := a.Follow("o", "r", "user:u1", "session:s1")
	otherOnA := a.Follow("o", "r", "user:u2", "session:s2")
	keyOnB := b.Follow("o", "r", "user:u1", "key:k1")
	sessionOnB := b.Follow("o", "r2", "user:u1", "session:s1")
	closed := a.Follow("o", "r", "key:k1")
	closed.Close()

	a.End("key:k1")
	if !gone(keyOnA) || gone(sessionOnA) || gone(otherOnA) {
		t.Fatal("End did not drop exactly the key's follower here at once")
	}
	waitFor(t, "the key's follower on the other replica", func() bool { return gone(keyOnB) })

	a.EndLocal("session:s1")
	if !gone(sessionOnA) || gone(otherOnA) {
		t.Fatal("EndLocal did not drop the session's follower here")
	}
	time.Sleep(50 * time.Millisecond)
	if gone(sessionOnB) {
		t.Fatal("EndLocal reached the other replica")
	}
	b.End("user:u1")
	if !gone(sessionOnB) {
		t.Fatal("the user's follower on b stayed")
	}
	if gone(otherOnA) {
		t.Fatal("another user's follower was dropped")
	}
	if st := a.Stats(); st.Followers != 1 || st.Ended != 2 {
		t.Fatalf("a's stats %+v: want the other user's follower left, 2 ended", st)
	}
	a.mu.Lock()
	owners := len(a.owners)
	a.mu.Unlock()
	if owners != 2 { // user:u2 and session:s2
		t.Fatalf("a keeps %d owners, want 2", owners)
	}
	// Events still reach the follower that stayed.
	a.Publish(Event{Org: "o", Task: "r", Name: EventLog, Log: "x\n"})
	waitFor(t, "an event", func() bool { return len(otherOnA.Events()) == 1 })
}
