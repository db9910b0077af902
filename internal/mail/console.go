package mail

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
)

// ConsoleSender writes each message, both parts, to a writer. It is the sender when no mail
// provider is configured, so a developer can still follow an invitation link from the log.
type ConsoleSender struct {
	mu sync.Mutex // one message is one block, never interleaved with another
	w  io.Writer
}

// NewConsoleSender returns a sender that writes to w.
func NewConsoleSender(w io.Writer) *ConsoleSender { return &ConsoleSender{w: w} }

// Send writes m to the console.
func (c *ConsoleSender) Send(ctx context.Context, m Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := m.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "===== e-mail (console: no mail provider configured) =====\n")
	fmt.Fprintf(&b, "To: %s\nSubject: %s\n", strings.Join(m.To, ", "), m.Subject)
	fmt.Fprintf(&b, "----- text/plain -----\n%s\n", strings.TrimRight(m.Text, "\n"))
	fmt.Fprintf(&b, "----- text/html -----\n%s\n", strings.TrimRight(m.HTML, "\n"))
	fmt.Fprintf(&b, "===== end of e-mail =====\n")
	c.mu.Lock()
	defer c.mu.Unlock()
	_, err := c.w.Write(b.Bytes())
	return err
}
