// Package cli is `verdict run`: it queues a run on a Verdict server with an API key, writes the
// run's log to standard output as it comes (over the run's event stream, resumed where it
// broke off when the connection drops), prints the report link, writes the parsed results as
// JUnit XML when asked, and exits with the run's verdict, so a CI job fails when its suite does
// (or when its project's quality gate fails the run).
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"
	"verdict/internal/junitxml"
)

// Exit codes of `verdict run`.
const (
	ExitPassed  = 0 // PASSED, and UNSTABLE unless --strict; --no-wait: queued
	ExitFailed  = 1 // FAILED, and UNSTABLE with --strict
	ExitError   = 2 // ERROR, CANCELLED, timed out, or left unfinished
	ExitRefused = 3 // bad flags or credentials, a limit, or the server unreachable
	// ExitGateFailed: the run passed (PASSED, or UNSTABLE without --strict) but its project's
	// quality gate failed it; unless --ignore-gate. A run that failed exits 1 or 2 as it would.
	ExitGateFailed = 4
)

// IO is what a run talks to: its output streams, its environment, the interrupts (Ctrl-C,
// SIGTERM) and the question asked on the first one.
type IO struct {
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Interrupts     <-chan os.Signal
	// Ask asks a yes/no question on the terminal; false when there is nobody to answer.
	Ask func(question string) bool
}

type options struct {
	server, apiKey                      string
	project, image, folder, environment string
	baseURL, taskID, junit, command     string
	timeout                             time.Duration
	env, labels                         map[string]string
	noWait, strict, cancelOnInterrupt   bool
	ignoreGate                          bool
	retryFor                            time.Duration
	// shards and retries are sent when set (shards > 0, retries >= 0); else the project's.
	shards, retries int
}

const usage = `Usage: verdict run [flags]

Queues a run on a Verdict server, writes its log to standard output as it comes, and exits
with its verdict: 0 PASSED (and UNSTABLE unless --strict), 1 FAILED, 2 ERROR, CANCELLED or
timed out, 3 refused (flags, credentials, limits) or server unreachable, 4 the run passed but
its project's quality gate failed it (unless --ignore-gate).

Flags:`

// Run is `verdict run` with args (after "run"); it returns the exit code.
func Run(ctx context.Context, args []string, io IO) int {
	o, err := parseFlags(args, io)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitPassed
		}
		fmt.Fprintln(io.Stderr, "verdict run:", err)
		return ExitRefused
	}
	c, err := newClient(o.server, o.apiKey)
	if err != nil {
		fmt.Fprintln(io.Stderr, "verdict run:", err)
		return ExitRefused
	}
	r := &runner{o: o, c: c, io: io}
	return r.run(ctx)
}

// multiFlag is a repeatable KEY=VALUE flag.
type multiFlag struct {
	into map[string]string
	name string
}

func (m multiFlag) String() string { return "" }
func (m multiFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("--%s wants KEY=VALUE, got %q", m.name, v)
	}
	m.into[k] = val
	return nil
}

func parseFlags(args []string, io IO) (*options, error) {
	o := &options{env: map[string]string{}, labels: map[string]string{}}
	fs := flag.NewFlagSet("verdict run", flag.ContinueOnError)
	fs.SetOutput(io.Stderr)
	fs.Usage = func() {
		fmt.Fprintln(io.Stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.server, "server", io.Getenv("VERDICT_URL"), "the server's URL (default $VERDICT_URL)")
	fs.StringVar(&o.apiKey, "api-key", io.Getenv("VERDICT_API_KEY"), "an API key (default $VERDICT_API_KEY)")
	fs.StringVar(&o.project, "project", "", "the project's id: its image, folder, variables and report folders")
	fs.StringVar(&o.image, "image", "", "the suite's container image (default: the project's, else the server's)")
	fs.StringVar(&o.folder, "folder", "", "the test folder to run (default: the project's, else all)")
	fs.StringVar(&o.environment, "environment", "", "the environment (development, staging, production)")
	fs.StringVar(&o.baseURL, "base-url", "", "the URL the suite tests (BASE_URL)")
	fs.StringVar(&o.command, "command", "", "the command to run instead of the image's")
	fs.StringVar(&o.taskID, "task-id", "", "the run's id (default: the server chooses)")
	fs.DurationVar(&o.timeout, "timeout", 0, "the run's timeout, a duration such as 20m (default: the server's)")
	fs.StringVar(&o.junit, "junit", "", "write the parsed results to this file as JUnit XML")
	fs.BoolVar(&o.noWait, "no-wait", false, "queue the run, print its id and exit 0")
	fs.BoolVar(&o.strict, "strict", false, "exit 1 for UNSTABLE (tests that passed only on a retry)")
	fs.BoolVar(&o.ignoreGate, "ignore-gate", false, "exit by the run's status even when its project's quality gate failed it (the gate is still printed)")
	fs.BoolVar(&o.cancelOnInterrupt, "cancel-on-interrupt", false, "cancel the run on Ctrl-C or SIGTERM without asking (for CI)")
	fs.DurationVar(&o.retryFor, "retry-for", 5*time.Minute, "how long to keep reconnecting to a server that stopped answering")
	fs.IntVar(&o.shards, "shards", 0, "spread the run over this many containers (default: the project's, else 1)")
	fs.IntVar(&o.retries, "retries", -1, "retry containers for the failed tests, 0 to 3 (default: the project's, else 0)")
	fs.Var(multiFlag{o.env, "env"}, "env", "a variable for the suite, KEY=VALUE (repeatable)")
	fs.Var(multiFlag{o.labels, "label"}, "label", "a label of the run, key=value (repeatable); commit, branch and pipeline come from the CI's variables")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags only; see --help)", fs.Arg(0))
	}
	if o.server == "" {
		return nil, errors.New("no server: set --server or VERDICT_URL")
	}
	if o.apiKey == "" {
		return nil, errors.New("no API key: set --api-key or VERDICT_API_KEY")
	}
	if o.timeout < 0 {
		return nil, errors.New("--timeout must be positive")
	}
	if o.shards < 0 || o.retries < -1 {
		return nil, errors.New("--shards and --retries must not be negative")
	}
	for k, v := range ciLabels(io.Getenv) {
		if _, set := o.labels[k]; !set {
			o.labels[k] = v
		}
	}
	return o, nil
}

// ciLabels are the repository, commit, branch and pipeline of the CI job running the command,
// from the variables GitHub Actions and GitLab CI set: a run labelled with its repository and
// commit reports its status to that commit.
func ciLabels(getenv func(string) string) map[string]string {
	out := map[string]string{}
	set := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		set("repo", getenv("GITHUB_REPOSITORY"))
		set("commit", getenv("GITHUB_SHA"))
		if b := getenv("GITHUB_HEAD_REF"); b != "" { // a pull request's branch
			set("branch", b)
		} else {
			set("branch", getenv("GITHUB_REF_NAME"))
		}
		set("pipeline", getenv("GITHUB_RUN_ID"))
	case getenv("GITLAB_CI") == "true":
		set("repo", getenv("CI_PROJECT_PATH"))
		set("commit", getenv("CI_COMMIT_SHA"))
		set("branch", getenv("CI_COMMIT_REF_NAME"))
		set("pipeline", getenv("CI_PIPELINE_ID"))
	}
	return out
}

// execution is what the command reads of the execution view.
type execution struct {
	TaskID    string       `json:"taskId"`
	ProjectID *string      `json:"projectId"`
	Status    string       `json:"status"`
	Error     *string      `json:"error"`
	Tests     []testResult `json:"tests"`
	Summary   struct {
		Total, Passed, Failed, Skipped, Flaky int
	} `json:"summary"`
	// Gate is the project's quality gate's judgement of the run; nil: none (no rules).
	Gate *gate `json:"gate"`
	// Shards are a sharded run's containers.
	Shards []shard `json:"shards"`
	// QuarantinedFailures are the run's failed tests whose failures did not count.
	QuarantinedFailures []struct {
		Test struct {
			ID, Suite, Name string
		} `json:"test"`
		Status string `json:"status"`
	} `json:"quarantinedFailures"`
}

// gate is a run's quality gate as its view shows it.
type gate struct {
	Status string `json:"status"` // passed or failed
	Rules  []struct {
		Rule              string
		Passed            bool
		Actual, Threshold float64
		Message           string
	} `json:"rules"`
	BaselineTaskID *string `json:"baselineTaskId"`
}

func final(status string) bool {
	switch status {
	case "PASSED", "FAILED", "UNSTABLE", "ERROR", "CANCELLED":
		return true
	}
	return false
}

type runner struct {
	o  *options
	c  *client
	io IO
	// shards follows the logs of a sharded run's shards; nil for a run of one container.
	shards *shardLogs
	outMu  sync.Mutex // the log's writers: the run's stream and its shards'
}

func (r *runner) say(format string, args ...any) {
	fmt.Fprintf(r.io.Stderr, "verdict: "+format+"\n", args...)
}

func (r *runner) refused(what string, err error) int {
	r.say("%s: %v", what, err)
	return ExitRefused
}

func (r *runner) run(ctx context.Context) int {
	body := map[string]any{}
	for k, v := range map[string]string{"projectId": r.o.project, "image": r.o.image, "folder": r.o.folder,
		"environment": r.o.environment, "baseUrl": r.o.baseURL, "taskId": r.o.taskID, "command": r.o.command} {
		if v != "" {
			body[k] = v
		}
	}
	if len(r.o.env) > 0 {
		body["envVars"] = r.o.env
	}
	if len(r.o.labels) > 0 {
		body["labels"] = r.o.labels
	}
	if r.o.timeout > 0 {
		body["timeoutSeconds"] = int(math.Ceil(r.o.timeout.Seconds()))
	}
	if r.o.shards > 0 {
		body["shards"] = r.o.shards
	}
	if r.o.retries >= 0 {
		body["retries"] = r.o.retries
	}
	var queued struct {
		TaskID    string `json:"taskId"`
		Status    string `json:"status"`
		Execution struct {
			ShardTotal int `json:"shardTotal"`
		} `json:"execution"`
	}
	if err := r.c.call(ctx, "POST", "/api/executions", body, &queued); err != nil {
		return r.refused("queueing the run", err)
	}
	if r.o.noWait {
		fmt.Fprintln(r.io.Stdout, queued.TaskID)
		return ExitPassed
	}
	r.say("run %s queued", queued.TaskID)
	if n := queued.Execution.ShardTotal; n > 0 {
		r.shards = newShardLogs(r, queued.TaskID)
		for i := 1; i <= n; i++ {
			r.shards.start(ctx, i)
		}
		r.say("run %s: %d shard(s); each log line is prefixed by its shard", queued.TaskID, n)
	}
	status, code := r.follow(ctx, queued.TaskID)
	r.shards.wait(10 * time.Second)
	if code >= 0 {
		return code
	}
	return r.finish(ctx, queued.TaskID, status)
}

// follow writes the run's log until its final status, resuming the stream where it broke off.
// It returns the final status, or an exit code (≥ 0) when it cannot go on.
func (r *runner) follow(ctx context.Context, taskID string) (string, int) {
	var since int64
	interrupted := false
	failingSince := time.Time{}
	for attempt := 0; ; attempt++ {
		streamCtx, cancel := context.WithCancel(ctx)
		type outcome struct {
			status string
			err    error
		}
		done := make(chan outcome, 1)
		go func() {
			status, err := r.stream(streamCtx, taskID, &since)
			done <- outcome{status, err}
		}()
		var out outcome
	wait:
		for {
			select {
			case out = <-done:
				break wait
			case <-r.io.Interrupts:
				if interrupted {
					cancel()
					<-done // nothing more is written once the command returns
					r.say("interrupted again: leaving run %s as it is", taskID)
					return "", ExitError
				}
				interrupted = true
				if r.o.cancelOnInterrupt || (r.io.Ask != nil && r.io.Ask(fmt.Sprintf("Cancel run %s? [y/N] ", taskID))) {
					if err := r.c.call(ctx, "POST", "/api/executions/"+url.PathEscape(taskID)+"/cancel", nil, nil); err != nil {
						r.say("cancelling: %v", err)
					} else {
						r.say("cancellation requested; waiting for the run to stop (Ctrl-C again to leave)")
					}
					continue
				}
				cancel()
				<-done
				r.say("left run %s running", taskID)
				return "", ExitError
			}
		}
		cancel()
		if out.err == nil && final(out.status) {
			return out.status, -1
		}
		if ctx.Err() != nil {
			return "", ExitError
		}
		var ae *apiError
		if errors.As(out.err, &ae) {
			if ae.Status == 401 || ae.Status == 403 || ae.Status == 404 {
				return "", r.refused("following the run", out.err)
			}
		}
		// A dropped connection, a server restarting or a stream that ended early: resume.
		if out.err != nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) > r.o.retryFor {
				return "", r.refused("following the run", out.err)
			}
			r.say("connection lost (%v); resuming at byte %d", out.err, since)
		} else {
			failingSince = time.Time{}
		}
		select {
		case <-time.After(backoff(attempt)):
		case <-ctx.Done():
			return "", ExitError
		}
		if out.err == nil {
			attempt = 0
		}
	}
}

func backoff(attempt int) time.Duration {
	return min(time.Duration(250*(1<<min(attempt, 5)))*time.Millisecond, 5*time.Second)
}

// stream reads one connection of the event stream, writing the log from *since on, and
// returns the final status once it arrives ("" when the stream ended before it).
func (r *runner) stream(ctx context.Context, taskID string, since *int64) (string, error) {
	res, err := r.c.follow(ctx, taskID, *since, 0)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	status := ""
	var werr error
	err = readEvents(res.Body, func(ev event) bool {
		switch ev.Name {
		case "execution-log":
			var l struct {
				Log    string `json:"log"`
				Offset int64  `json:"offset"`
			}
			if json.Unmarshal([]byte(ev.Data), &l) != nil {
				return true
			}
			end := l.Offset + int64(len(l.Log))
			if end <= *since {
				return true // already written
			}
			text := l.Log
			if l.Offset < *since {
				text = text[*since-l.Offset:]
			}
			if werr = r.write(text); werr != nil {
				return false
			}
			*since = end
		case "execution-updated":
			var e execution
			if json.Unmarshal([]byte(ev.Data), &e) != nil {
				return true
			}
			for _, s := range e.Shards {
				r.shards.start(ctx, s.Index) // a retry container appears while the run goes on
			}
			if final(e.Status) {
				status = e.Status
				return false
			}
		}
		return true
	})
	if werr != nil {
		return "", werr
	}
	if status != "" {
		return status, nil
	}
	if err == nil && ctx.Err() == nil {
		return "", nil // the stream ended without the final status: resume
	}
	if err == nil {
		err = ctx.Err()
	}
	return "", err
}

// finish reports the run's outcome: its tests, report link and JUnit file, and the exit code.
func (r *runner) finish(ctx context.Context, taskID, status string) int {
	var view struct {
		Execution execution `json:"execution"`
	}
	if err := r.c.call(ctx, "GET", "/api/executions/"+url.PathEscape(taskID), nil, &view); err != nil {
		r.say("reading the run's results: %v", err)
	}
	e := view.Execution
	if e.Status != "" {
		status = e.Status
	}
	judged := true
	if e.Gate == nil && e.ProjectID != nil && final(e.Status) {
		judged = r.awaitGate(ctx, &e)
	}
	s := e.Summary
	r.say("run %s %s: %d tests, %d passed, %d failed, %d flaky, %d skipped", taskID, status, s.Total, s.Passed, s.Failed, s.Flaky, s.Skipped)
	if e.Error != nil && *e.Error != "" {
		r.say("error: %s", *e.Error)
	}
	var link struct {
		URL string `json:"url"`
	}
	if err := r.c.call(ctx, "GET", "/api/executions/"+url.PathEscape(taskID)+"/report-token", nil, &link); err == nil && link.URL != "" {
		r.say("report: %s", link.URL)
	}
	r.printShards(e.Shards)
	r.printQuarantined(e)
	r.printGate(e.Gate)
	if r.o.junit != "" {
		if err := r.writeJUnit(taskID, e.Tests); err != nil {
			r.say("writing %s: %v", r.o.junit, err)
			return ExitError
		}
	}
	code := ExitError
	switch status {
	case "PASSED":
		code = ExitPassed
	case "UNSTABLE":
		code = ExitPassed
		if r.o.strict {
			code = ExitFailed
		}
	case "FAILED":
		code = ExitFailed
	}
	if code == ExitPassed && !judged {
		if r.o.ignoreGate {
			r.say("the quality gate has not judged the run; ignored (--ignore-gate)")
		} else {
			r.say("the quality gate has not judged the run: exit %d (--ignore-gate exits by the run's status)", ExitError)
			code = ExitError
		}
	}
	if code == ExitPassed && e.Gate != nil && e.Gate.Status == "failed" {
		if r.o.ignoreGate {
			r.say("the quality gate failed; ignored (--ignore-gate)")
		} else {
			r.say("the quality gate failed: exit %d (--ignore-gate exits by the run's status)", ExitGateFailed)
			code = ExitGateFailed
		}
	}
	return code
}

// gateWait bounds how long the command waits for a finished run's gate: the server judges a run
// just after its final status (within 30 s), and catches up within a minute when it could not.
var gateWait = 90 * time.Second

// gatePoll is how often the command asks for the gate while it waits.
var gatePoll = 500 * time.Millisecond

// awaitGate waits for the gate of e, a finished run of a project without one yet, when its
// project has gate rules, reading the run again into e; false when the project has rules and
// the run was not judged within gateWait. A project without rules (or a server without gates)
// has no gate to wait for.
func (r *runner) awaitGate(ctx context.Context, e *execution) bool {
	var rules struct {
		Data struct {
			Gate map[string]any `json:"gate"`
		} `json:"data"`
	}
	if err := r.c.call(ctx, "GET", "/api/projects/"+url.PathEscape(*e.ProjectID)+"/gate", nil, &rules); err != nil {
		return true
	}
	judges := false
	for _, v := range rules.Data.Gate {
		switch v := v.(type) {
		case bool:
			judges = judges || v
		case float64:
			judges = true
		}
	}
	if !judges {
		return true
	}
	deadline := time.Now().Add(gateWait)
	for time.Now().Before(deadline) {
		select {
		case <-time.After(gatePoll):
		case <-ctx.Done():
			return false
		}
		var view struct {
			Execution execution `json:"execution"`
		}
		if err := r.c.call(ctx, "GET", "/api/executions/"+url.PathEscape(e.TaskID), nil, &view); err == nil && view.Execution.Gate != nil {
			*e = view.Execution
			return true
		}
	}
	return false
}

// printQuarantined lists the run's failures that did not count: their tests were quarantined.
func (r *runner) printQuarantined(e execution) {
	if len(e.QuarantinedFailures) == 0 {
		return
	}
	r.say("%d quarantined failures (not counted):", len(e.QuarantinedFailures))
	for _, q := range e.QuarantinedFailures {
		name := q.Test.Name
		if q.Test.Suite != "" {
			name = q.Test.Suite + " › " + name
		}
		r.say("  %s (%s)", name, q.Status)
	}
}

// printGate prints the run's quality gate and each of its rules.
func (r *runner) printGate(g *gate) {
	if g == nil {
		return
	}
	against := "no baseline run"
	if g.BaselineTaskID != nil {
		against = "baseline " + *g.BaselineTaskID
	}
	r.say("quality gate %s (%s)", strings.ToUpper(g.Status), against)
	for _, rule := range g.Rules {
		mark := "pass"
		if !rule.Passed {
			mark = "FAIL"
		}
		r.say("  %s %s: %s", mark, rule.Rule, rule.Message)
	}
}

func (r *runner) writeJUnit(taskID string, tests []testResult) error {
	f, err := os.Create(r.o.junit)
	if err != nil {
		return err
	}
	out := make([]junitxml.Test, len(tests))
	for i, t := range tests {
		out[i] = junitxml.Test(t)
	}
	if err := junitxml.Write(f, taskID, out); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
