package mail

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"
)

// received is one message as the test SMTP server got it.
type received struct {
	From string
	To   []string
	Data []byte
	TLS  bool
}

// smtpServer is a real SMTP server (go-smtp) on 127.0.0.1 that keeps what it receives.
type smtpServer struct {
	Port int

	user, pass string // when set, AUTH PLAIN is required before MAIL

	mu        sync.Mutex
	msgs      []received
	rejectN   int // the next rejectN DATA commands get a 550
	dataCalls int
}

type smtpOptions struct {
	user, pass string
	rejectN    int
	tls        *tls.Config // offered with STARTTLS
	implicit   bool        // TLS from the first byte instead of STARTTLS
}

func startSMTP(t *testing.T, o smtpOptions) *smtpServer {
	t.Helper()
	s := &smtpServer{user: o.user, pass: o.pass, rejectN: o.rejectN}
	srv := smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		_, isTLS := c.TLSConnectionState()
		return &smtpSession{srv: s, tls: isTLS}, nil
	}))
	srv.Domain = "localhost"
	srv.ReadTimeout = 10 * time.Second
	srv.WriteTimeout = 10 * time.Second
	srv.ErrorLog = testLogger{t}
	// Without TLS the client may only authenticate because the server is localhost.
	srv.AllowInsecureAuth = o.tls == nil
	var l net.Listener
	var err error
	l, err = net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if o.implicit {
		l = tls.NewListener(l, o.tls)
	} else {
		srv.TLSConfig = o.tls
	}
	s.Port = l.Addr().(*net.TCPAddr).Port
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

func (s *smtpServer) messages() []received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]received(nil), s.msgs...)
}

func (s *smtpServer) dataAttempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dataCalls
}

// setReject makes the next n DATA commands fail with a 550.
func (s *smtpServer) setReject(n int) {
	s.mu.Lock()
	s.rejectN = n
	s.mu.Unlock()
}

type smtpSession struct {
	srv    *smtpServer
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
	s.srv.msgs = append(s.srv.msgs, received{From: s.from, To: s.to, Data: b, TLS: s.tls})
	return nil
}

func (s *smtpSession) Reset()        { s.from, s.to = "", nil }
func (s *smtpSession) Logout() error { return nil }

type testLogger struct{ t *testing.T }

func (l testLogger) Printf(format string, v ...any) { l.t.Logf("smtp server: "+format, v...) }
func (l testLogger) Println(v ...any)               { l.t.Log(append([]any{"smtp server:"}, v...)...) }

// selfSignedTLS returns a server config for 127.0.0.1 and a client config that trusts it.
func selfSignedTLS(t *testing.T) (server, client *tls.Config) {
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
