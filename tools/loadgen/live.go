package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"verdict/internal/domain"
	"verdict/internal/peerhttp"
	runplane "verdict/internal/run"
)

// queue queues runs through the API (POST /api/executions as each organization's admin), per
// organization, with a few requests at a time, and prints how many it queued. With no runner
// they stay PENDING: the newest page of every organization's run list is runs still going, as
// on a busy server.
func queue(args []string) error {
	fs := flag.NewFlagSet("queue", flag.ExitOnError)
	u := fs.String("url", "", "the server's base URL")
	tokensFile := fs.String("tokens", "", "bearer tokens of the organizations' admins, one a line")
	perOrg := fs.Int("per-org", 100, "runs to queue per organization")
	image := fs.String("image", "verdict-examples/pass:latest", "the runs' image")
	workers := fs.Int("workers", 8, "requests at a time")
	_ = fs.Parse(args)
	raw, err := os.ReadFile(*tokensFile)
	if err != nil {
		return err
	}
	tokens := strings.Fields(string(raw))
	c := &http.Client{Timeout: 30 * time.Second}
	jobs := make(chan string)
	var queued atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for tok := range jobs {
				req, _ := http.NewRequest("POST", *u+"/api/executions", strings.NewReader(fmt.Sprintf(`{"image":%q}`, *image)))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				res, err := c.Do(req)
				if err == nil {
					body, _ := io.ReadAll(res.Body)
					res.Body.Close()
					if res.StatusCode != http.StatusCreated && res.StatusCode != http.StatusOK {
						err = fmt.Errorf("POST /api/executions: %d %s", res.StatusCode, body)
					}
				}
				if err != nil {
					once.Do(func() { firstErr = err })
					continue
				}
				queued.Add(1)
			}
		}()
	}
	for range *perOrg {
		for _, tok := range tokens {
			jobs <- tok
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("queued %d: %w", queued.Load(), firstErr)
	}
	fmt.Println(queued.Load())
	return nil
}

// runner is a remote runner over Verdict's runner protocol (the one `verdict runner` speaks)
// that runs nothing: it claims queued runs and settles each at once (started, a log line,
// PASSED), at most -rate a second, until it is stopped; then it prints how many it finished.
// Every step is a real write of the run plane, so reads measured meanwhile see the writes of a
// server whose runs are ending.
func runner(args []string) error {
	fs := flag.NewFlagSet("runner", flag.ExitOnError)
	u := fs.String("url", "", "the server's base URL")
	secret := fs.String("secret", "", "VERDICT_RUNNER_SECRET")
	rate := fs.Float64("rate", 5, "runs finished a second")
	_ = fs.Parse(args)
	c, err := peerhttp.NewClient(peerhttp.ClientDeps{URL: *u, Secret: *secret, Name: "loadgen", Slots: 4,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := c.Hello(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / *rate))
	defer tick.Stop()
	done := 0
	for {
		select {
		case <-ctx.Done():
			fmt.Println(done)
			return nil
		case <-tick.C:
		}
		w, err := c.Next(ctx, 30*time.Second)
		if err != nil || w == nil {
			if ctx.Err() != nil {
				fmt.Println(done)
				return nil
			}
			if err != nil {
				return err
			}
			continue
		}
		if err := settle(ctx, c, w); err != nil && ctx.Err() == nil {
			return fmt.Errorf("run %s: %w", w.TaskID, err)
		}
		done++
	}
}

// settle reports a claimed run started, one log line, and PASSED.
func settle(ctx context.Context, c *peerhttp.Client, w *runplane.Work) error {
	if err := c.Started(ctx, w.ID, "loadgen-"+domain.RandomHex(6)); err != nil {
		return err
	}
	if err := c.Log(ctx, w.ID, 1, 0, "loadgen: nothing to run\n"); err != nil {
		return err
	}
	exit := 0
	return c.Done(ctx, w.ID, runplane.Result{Status: domain.ExecPassed, ExitCode: &exit, FinishedAt: time.Now()})
}
