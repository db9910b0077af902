package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"verdict/internal/app"
	"verdict/internal/config"
)

// shutdownGrace is how long requests in flight may take to finish after SIGTERM.
const shutdownGrace = 20 * time.Second

func serve(ctx context.Context) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := config.NewLogger(os.Stderr, cfg.Server.LogLevel, cfg.Server.LogFormat)
	a, err := app.New(ctx, cfg, log, app.Options{Version: version})
	if err != nil {
		return err
	}
	defer a.Close()

	ln, err := net.Listen("tcp", cfg.Server.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: a.API, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}

	var wg sync.WaitGroup
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	wg.Add(1)
	go func() { defer wg.Done(); a.Run(bg) }()

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	log.Info("verdict serving", "addr", ln.Addr().String(), "database", a.Store.Dialect(),
		"redis", cfg.Database.RedisURL != "", "public_url", cfg.Server.PublicURL, "version", version)

	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing requests in flight", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	a.CloseRealtime()
	err = srv.Shutdown(sctx)
	stopBG()
	wg.Wait()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}
