package testenv

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Cutter puts a TCP proxy between a test and addr (host:port), so that the test can take a
// shared service away from its own connections alone, as when the service's host goes down or
// the network to it breaks: cut closes every connection through the proxy and refuses new ones
// (each is accepted and closed at once, so a client fails fast instead of waiting on a
// timeout); restore lets new connections through again. Other tests' connections to addr are
// never touched. The proxy stops when the test ends.
func Cutter(t testing.TB, addr string) (proxyAddr string, cut, restore func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutter{target: addr, conns: map[net.Conn]bool{}}
	var wg sync.WaitGroup
	wg.Go(func() { p.serve(ln, &wg) })
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		wg.Wait()
	})
	return ln.Addr().String(), p.cut, p.restore
}

type cutter struct {
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]bool // both ends of every proxied connection
}

func (p *cutter) serve(ln net.Listener, wg *sync.WaitGroup) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { p.proxy(c) })
	}
}

// proxy joins c to a new connection to the target, unless the proxy is cut.
func (p *cutter) proxy(c net.Conn) {
	if !p.track(c) {
		c.Close()
		return
	}
	defer p.forget(c)
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	if !p.track(up) {
		up.Close()
		return
	}
	defer p.forget(up)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done // one side ended: end both
	c.Close()
	up.Close()
	<-done
}

// track records c as open; false when the proxy is cut (c must then be closed).
func (p *cutter) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *cutter) forget(c net.Conn) {
	c.Close()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *cutter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = true
	for c := range p.conns {
		c.Close()
	}
}

func (p *cutter) restore() {
	p.mu.Lock()
	p.down = false
	p.mu.Unlock()
}
