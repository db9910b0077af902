package realtime

import (
	"testing"
	"time"
)

func TestSmoke(t *testing.T) {
	h := newHub(t, Options{})
	srv := serve(t, h)
	for _, tr := range []string{"websocket", "polling"} {
		c := dial(t, srv.URL, tokenFor("o1", "u1", "admin"), tr)
		t.Log(c.authenticated())
		h.Emit("o1", EventExecutionLog, ExecutionLog{TaskID: "t1", Log: "hello\n"})
		e := c.expect(EventExecutionLog)
		t.Log(e.args)
		bad := dial(t, srv.URL, "nope", tr)
		t.Log(bad.next(5 * time.Second))
		t.Log(bad.next(5 * time.Second))
	}
}
