package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The sharded mode (image verdict-examples/sharded) is a suite of 200 tests in 40 spec files
// with skewed durations: 4 long files (5 tests of 60 units each) and 36 short ones (5 tests of
// 6 to 10 units), a unit being UNIT_MS milliseconds (default 1) of real sleep. It reads the
// container contract's sharding variables as a real runner's wrapper would:
//
//   - VERDICT_TESTS_FILE: the spec files (or, in a retry container, the test names) to run, one
//     per line. Files in no shard's list (VERDICT_ALL_TESTS_FILE: new ones) are spread by
//     SHARD_INDEX/SHARD_TOTAL over the shards, one file each in turn.
//   - without a list: SHARD_INDEX/SHARD_TOTAL only, and the suite splits by itself, as
//     `playwright test --shard=i/n` does: the i-th of n contiguous groups of its sorted files.
//   - VERDICT_RETRY=1: a retry container of the failed tests (FLAKY_TESTS then pass).
//
// FLAKY_TESTS names tests (comma-separated) that fail except in a retry container; FAIL_TESTS
// tests that always fail.
func shardedCases() []testCase {
	var out []testCase
	add := func(file string, units []int) {
		for i, u := range units {
			out = append(out, testCase{folder: "specs", file: file, name: fmt.Sprintf("%s test %d", strings.TrimSuffix(file, ".spec.ts"), i+1),
				attempts: []attempt{ok(time.Duration(u))}})
		}
	}
	for i := 1; i <= 4; i++ {
		add(fmt.Sprintf("long-%d.spec.ts", i), []int{60, 60, 60, 60, 60})
	}
	for i := 1; i <= 36; i++ {
		u := 6 + i%5
		add(fmt.Sprintf("short-%02d.spec.ts", i), []int{u, u, u, u, u})
	}
	return out
}

// readList reads a list file, one entry per line; nil when the variable names none.
func readList(path string) ([]string, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	list := []string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			list = append(list, l)
		}
	}
	return list, sc.Err()
}

// shardSelect picks the tests this container runs.
func shardSelect(all []testCase, get func(string) string) ([]testCase, string, error) {
	index, _ := strconv.Atoi(get("SHARD_INDEX"))
	total, _ := strconv.Atoi(get("SHARD_TOTAL"))
	if index < 1 || total < 1 {
		index, total = 1, 1
	}
	mine, err := readList(get("VERDICT_TESTS_FILE"))
	if err != nil {
		return nil, "", err
	}
	known, err := readList(get("VERDICT_ALL_TESTS_FILE"))
	if err != nil {
		return nil, "", err
	}
	key := func(t testCase) string { return t.folder + "/" + t.file }
	var files []string
	for _, t := range all {
		if k := key(t); !slices.Contains(files, k) {
			files = append(files, k)
		}
	}
	slices.Sort(files)
	if get("VERDICT_RETRY") == "1" {
		// A retry container's list names tests.
		sel := slices.DeleteFunc(slices.Clone(all), func(t testCase) bool { return !slices.Contains(mine, t.name) })
		return sel, fmt.Sprintf("retry of %d failed test(s)", len(sel)), nil
	}
	var pick []string
	how := ""
	if mine != nil {
		pick = mine
		var fresh []string
		for _, f := range files {
			if !slices.Contains(known, f) {
				fresh = append(fresh, f)
			}
		}
		for i, f := range fresh {
			if i%total == index-1 {
				pick = append(pick, f)
			}
		}
		how = fmt.Sprintf("shard %d/%d: %d file(s) from VERDICT_TESTS_FILE, %d new", index, total, len(mine), len(pick)-len(mine))
	} else {
		lo, hi := (index-1)*len(files)/total, index*len(files)/total
		pick = files[lo:hi]
		how = fmt.Sprintf("shard %d/%d: files %d to %d of %d (own split)", index, total, lo+1, hi, len(files))
	}
	sel := slices.DeleteFunc(slices.Clone(all), func(t testCase) bool { return !slices.Contains(pick, key(t)) })
	return sel, how, nil
}

// runSharded runs the sharded mode's selected tests for real (they sleep their duration) and
// writes a JUnit report.
func runSharded(root string, get func(string) string, stdout, stderr io.Writer) int {
	unit := time.Millisecond
	if n, err := strconv.Atoi(get("UNIT_MS")); err == nil && n > 0 {
		unit = time.Duration(n) * time.Millisecond
	}
	all := shardedCases()
	sel, how, err := shardSelect(all, get)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	retry := get("VERDICT_RETRY") == "1"
	flaky := strings.Split(get("FLAKY_TESTS"), ",")
	failing := strings.Split(get("FAIL_TESTS"), ",")
	fmt.Fprintf(stdout, "verdict example suite (mode sharded), TASK_ID=%s, %s\n", get("TASK_ID"), how)
	start := time.Now()
	failures := 0
	for i := range sel {
		t := &sel[i]
		d := t.attempts[0].duration * unit
		time.Sleep(d)
		t.attempts[0].duration = d
		if slices.Contains(failing, t.name) || (!retry && slices.Contains(flaky, t.name)) {
			t.attempts[0] = failed(d, "failed: "+t.name)
			failures++
		}
		status := "ok"
		if !t.passed() {
			status = "FAILED"
		}
		fmt.Fprintf(stdout, "  %s/%s > %s: %s\n", t.folder, t.file, t.name, status)
	}
	if err := writeJUnit(root, start, sel); err != nil {
		fmt.Fprintf(stderr, "writing reports: %v\n", err)
		return 2
	}
	fmt.Fprintf(stdout, "%d tests, %d failed, %s\n", len(sel), failures, time.Since(start).Round(time.Millisecond))
	if failures > 0 {
		return 1
	}
	return 0
}
