package mail

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"strings"
	"time"

	gomail "github.com/wneessen/go-mail"

	"verdict/internal/domain"
)

// TLS modes of SMTPConfig.TLS.
const (
	TLSNone     = "none"     // plain connection; AUTH is then only allowed to localhost
	TLSStartTLS = "starttls" // upgrade with STARTTLS, refusing a server that does not offer it
	TLSImplicit = "tls"      // TLS from the first byte (usually port 465)
)

// DefaultSMTPTimeout bounds one delivery when SMTPConfig.Timeout is 0.
const DefaultSMTPTimeout = 30 * time.Second

// SMTPConfig addresses a mail provider's SMTP relay.
type SMTPConfig struct {
	Host     string
	Port     int
	Username string // empty: no AUTH
	Password string
	From     string // e.g. "Verdict <noreply@example.com>"
	TLS      string // none | starttls | tls; empty means starttls
	// Timeout bounds one whole delivery, connection included; 0 means DefaultSMTPTimeout.
	Timeout time.Duration
	// TLSConfig overrides the TLS settings (tests trust a self-signed certificate with it);
	// nil verifies the server's certificate against the system roots for Host.
	TLSConfig *tls.Config
}

// SMTPSender sends through an SMTP relay with go-mail, one connection per message: the
// volume is a handful of transactional mails, not worth a pool that must notice dead links.
type SMTPSender struct {
	cfg        SMTPConfig
	opts       []gomail.Option
	tls        *tls.Config
	fromDomain string // right side of Message-IDs: the machine's hostname is rarely a public name
}

// NewSMTPSender checks cfg and returns a sender. It does not connect.
func NewSMTPSender(cfg SMTPConfig) (*SMTPSender, error) {
	if cfg.Host == "" {
		return nil, errors.New("mail: SMTP host is required")
	}
	if cfg.Port < 1 || cfg.Port > 65535 {
		return nil, fmt.Errorf("mail: SMTP port %d is out of range", cfg.Port)
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("mail: invalid from address %q: %w", cfg.From, err)
	}
	_, fromDomain, _ := strings.Cut(from.Address, "@")
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultSMTPTimeout
	}
	if cfg.TLS == "" {
		cfg.TLS = TLSStartTLS
	}
	opts := []gomail.Option{gomail.WithPort(cfg.Port), gomail.WithTimeout(cfg.Timeout)}
	switch cfg.TLS {
	case TLSNone:
		opts = append(opts, gomail.WithTLSPolicy(gomail.NoTLS))
	case TLSStartTLS:
		opts = append(opts, gomail.WithTLSPolicy(gomail.TLSMandatory))
	case TLSImplicit:
		opts = append(opts, gomail.WithSSL())
	default:
		return nil, fmt.Errorf("mail: SMTP TLS mode %q is not one of none, starttls, tls", cfg.TLS)
	}
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.TLSConfig != nil {
		tlsConfig = cfg.TLSConfig.Clone()
	}
	if tlsConfig.ServerName == "" {
		tlsConfig.ServerName = cfg.Host
	}
	opts = append(opts, gomail.WithTLSConfig(tlsConfig))
	if cfg.Username != "" {
		// PLAIN or LOGIN, whichever the relay offers; go-mail still refuses to send the
		// password over an unencrypted connection to anything but localhost.
		opts = append(opts, gomail.WithOpportunisticSMTPAuth(gomail.SMTPAuthPlain, gomail.SMTPAuthLogin),
			gomail.WithUsername(cfg.Username), gomail.WithPassword(cfg.Password))
	}
	s := &SMTPSender{cfg: cfg, opts: opts, tls: tlsConfig, fromDomain: fromDomain}
	if _, err := s.client(); err != nil {
		return nil, err
	}
	return s, nil
}

// client builds a fresh go-mail client: its auth negotiation mutates the client, so sharing
// one between concurrent sends would race.
func (s *SMTPSender) client(extra ...gomail.Option) (*gomail.Client, error) {
	c, err := gomail.NewClient(s.cfg.Host, append(s.opts[:len(s.opts):len(s.opts)], extra...)...)
	if err != nil {
		return nil, fmt.Errorf("mail: SMTP client: %w", err)
	}
	return c, nil
}

// Send delivers m as multipart/alternative (text/plain, then text/html, the preferred part last).
func (s *SMTPSender) Send(ctx context.Context, m Message) error {
	if err := m.Validate(); err != nil {
		return err
	}
	msg := gomail.NewMsg(gomail.WithNoDefaultUserAgent())
	if err := msg.From(s.cfg.From); err != nil {
		return fmt.Errorf("mail: from: %w", err)
	}
	if err := msg.To(m.To...); err != nil {
		return fmt.Errorf("mail: to: %w", err)
	}
	msg.Subject(m.Subject)
	msg.SetDate()
	msg.SetMessageIDWithValue(domain.RandomHex(16) + "@" + s.fromDomain)
	// RFC 3834: keeps vacation responders from answering a machine.
	msg.SetGenHeader("Auto-Submitted", "auto-generated")
	msg.SetBodyString(gomail.TypeTextPlain, m.Text)
	msg.AddAlternativeString(gomail.TypeTextHTML, m.HTML)

	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	// go-mail honours the context only while dialing; closing the connection when ctx ends
	// also stops a server that stalls mid-conversation, so shutdown and Timeout are prompt.
	var stop func() bool
	dial := func(dctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{}
		var conn net.Conn
		var err error
		if s.cfg.TLS == TLSImplicit {
			conn, err = (&tls.Dialer{NetDialer: d, Config: s.tls}).DialContext(dctx, network, addr)
		} else {
			conn, err = d.DialContext(dctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		stop = context.AfterFunc(ctx, func() { conn.Close() })
		return conn, nil
	}
	c, err := s.client(gomail.WithDialContextFunc(dial))
	if err != nil {
		return err
	}
	err = c.DialAndSendWithContext(ctx, msg)
	if stop != nil {
		stop()
	}
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%v)", ctxErr, err)
		}
		return fmt.Errorf("mail: SMTP %s:%d: %w", s.cfg.Host, s.cfg.Port, err)
	}
	return nil
}
