package testenv

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"io"
	"math/big"
	"mime"
	"mime/multipart"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// Received is one message as the test SMTP server got it.
type Received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
}

// SMTPServer is a real SMTP server (go-smtp) on 127.0.0.1 that keeps what it receives.
type SMTPServer struct {
	Port int

	user, pass string // when set, AUTH PLAIN is required before MAIL

	mu        sync.Mutex
	msgs      []Received
	rejectN   int // the next rejectN DATA commands get a 550
	dataCalls int
}

// SMTPOptions configure a test SMTP server.
type SMTPOptions struct {
	User, Pass string      // when set, AUTH PLAIN is required before MAIL
	RejectN    int         // the first RejectN DATA commands get a 550
	TLS        *tls.Config // offered with STARTTLS
	Implicit   bool        // TLS from the first byte instead of STARTTLS
}

// StartSMTP starts a real SMTP server (go-smtp) on 127.0.0.1 that keeps what it receives;
// it stops when the test ends.
func StartSMTP(t testing.TB, o SMTPOptions) *SMTPServer {
	t.Helper()
	s := &SMTPServer{user: o.User, pass: o.Pass, rejectN: o.RejectN}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &smtpSession{srv: s, tls: isTLS}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = testLogger{t}
	// Without TLS the client may only authenticate because the server is localhost.
	srv.AllowInsecureAuth = o.TLS == nil
	var l net.Listener
	var err error
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.Implicit {
		l = tls.NewListener(l, o.TLS)
	} else {
		srv.TLSConfig = o.TLS
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// Messages returns what the server received so far.
func (s *SMTPServer) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// DataAttempts counts DATA commands, rejected ones included.
func (s *SMTPServer) DataAttempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dataCalls
}

// SetReject makes the next n DATA commands fail with a 550.
func (s *SMTPServer) SetReject(n int) {
	s.mu.Lock()
	s.rejectN = n
	s.mu.Unlock()
}

type smtpSession struct {
	srv    *SMTPServer
	tls    bool
	authed bool
	from   string
	to     []string
}

func (s *smtpSession) AuthMechanisms() []string {
	if s.srv.user == "" {
		return nil
	}
	return []string{sasl.Plain}
}

func (s *smtpSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != s.srv.user || pass != s.srv.pass {
			return smtp.ErrAuthFailed
		}
		s.authed = true
		return nil
	}), nil
}

func (s *smtpSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.srv.user != "" && !s.authed {
		return smtp.ErrAuthRequired
	}
	s.from = from
	return nil
}

func (s *smtpSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.to = append(s.to, to)
	return nil
}

func (s *smtpSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s.srv.mu.Lock()
	defer s.srv.mu.Unlock()
	s.srv.dataCalls++
	if s.srv.rejectN > 0 {
		s.srv.rejectN--
		return &smtp.SMTPError{Code: 550, EnhancedCode: smtp.EnhancedCode{5, 7, 1}, Message: "<" + strings.Join(s.to, ">, <") + ">: rejected by test server"}
	}
	s.srv.msgs = append(s.srv.msgs, Received{From: s.from, To: s.to, Data: b, TLS: s.tls})
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

type testLogger struct{ t testing.TB }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }

// SelfSignedTLS returns a server config for 127.0.0.1 and a client config that trusts it.
func SelfSignedTLS(t testing.TB) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "verdict test smtp"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	client = &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	return server, client
}

// Mail is a received message split into the headers and parts tests check.
type Mail struct {
	Subject, From, To string
	MessageID         string
	AutoSubmitted     string
	Parts             map[string]string // media type → decoded body
	Order             []string          // media types in order
}

// ParseMail parses a multipart/alternative message as Verdict sends it.
func ParseMail(t testing.TB, raw []byte) Mail {
	t.Helper()
	msg, err := netmail.ReadMessage(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("read message: %v", err)
	}
	var dec mime.WordDecoder
	subject, err := dec.DecodeHeader(msg.Header.Get("Subject"))
	if err != nil {
		t.Fatal(err)
	}
	p := Mail{Subject: subject, From: msg.Header.Get("From"), To: msg.Header.Get("To"), Parts: map[string]string{},
		MessageID: msg.Header.Get("Message-Id"), AutoSubmitted: msg.Header.Get("Auto-Submitted")}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		t.Fatal(err)
	}
	if mt != "multipart/alternative" {
		t.Fatalf("Content-Type = %s, want multipart/alternative", mt)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	for {
		part, err := mr.NextPart() // decodes quoted-printable itself
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(part)
		if err != nil {
			t.Fatal(err)
		}
		if strings.EqualFold(part.Header.Get("Content-Transfer-Encoding"), "base64") {
			if body, err = base64.StdEncoding.DecodeString(strings.Join(strings.Fields(string(body)), "")); err != nil {
				t.Fatal(err)
			}
		}
		pt, pparams, err := mime.ParseMediaType(part.Header.Get("Content-Type"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(pparams["charset"], "utf-8") {
			t.Errorf("%s part charset = %q, want UTF-8", pt, pparams["charset"])
		}
		p.Parts[pt] = strings.ReplaceAll(string(body), "\r\n", "\n")
		p.Order = append(p.Order, pt)
	}
	return p
}
