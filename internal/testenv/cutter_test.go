package testenv

import (
	"bufio"
	"io"
	"net"
	"testing"
	"time"
)

// The proxy carries a connection until cut, which ends it and refuses new ones; restore lets
// new ones through again. The service behind it (an echo server here) is never touched.
func TestCutter(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	proxy, cut, restore := Cutter(t, ln.Addr().String())
	echo := func(c net.Conn) error {
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write([]byte("ping\n")); err != nil {
			return err
		}
		_, err := bufio.NewReader(c).ReadString('\n')
		return err
	}
	dial := func() net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", proxy)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	open := dial()
	if err := echo(open); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	cut()
	if err := echo(open); err == nil {
		t.Fatal("a connection open at the cut still works")
	}
	if err := echo(dial()); err == nil {
		t.Fatal("a new connection works while cut")
	}
	direct, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	if err := echo(direct); err != nil {
		t.Fatalf("the service itself was touched: %v", err)
	}
	restore()
	if err := echo(dial()); err != nil {
		t.Fatalf("after restore: %v", err)
	}
}
