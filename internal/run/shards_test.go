package run

import "testing"

// TestShardSpec: a shard's container gets its place in the run, the run's TASK_ID and its lists
// as files named by VERDICT_TESTS_FILE and VERDICT_ALL_TESTS_FILE; without a list, only
// SHARD_INDEX/SHARD_TOTAL; a retry container VERDICT_RETRY=1.
func TestShardSpec(t *testing.T) {
	r := &Runner{ID: "r1"}
	w := &Work{ID: "e1", OrganizationID: "o1", TaskID: "nightly~s2", Image: "img",
		Shard: &ShardWork{RunTaskID: "nightly", Index: 2, Total: 4, Tests: []string{"b.spec.ts", "c.spec.ts"}, AllTests: []string{"a.spec.ts", "b.spec.ts", "c.spec.ts"}}}
	s, err := r.spec(w, 0)
	if err != nil {
		t.Fatal(err)
	}
	env := s.Env
	if env["TASK_ID"] != "nightly" || env["SHARD_INDEX"] != "2" || env["SHARD_TOTAL"] != "4" || env["VERDICT_RETRY"] != "" ||
		env["VERDICT_TESTS_FILE"] != TestsFile || env["VERDICT_ALL_TESTS_FILE"] != AllTestsFile {
		t.Fatalf("env %v", env)
	}
	if string(s.Files[TestsFile]) != "b.spec.ts\nc.spec.ts\n" || string(s.Files[AllTestsFile]) != "a.spec.ts\nb.spec.ts\nc.spec.ts\n" {
		t.Fatalf("files %q", s.Files)
	}
	if s.Labels[LabelTask] != "nightly~s2" {
		t.Fatalf("labels %v: the container is found by the shard's own task", s.Labels)
	}

	w.Shard = &ShardWork{RunTaskID: "nightly", Index: 1, Total: 4}
	s, _ = r.spec(w, 0)
	if _, ok := s.Env["VERDICT_TESTS_FILE"]; ok || s.Files != nil || s.Env["SHARD_INDEX"] != "1" {
		t.Fatalf("no list: env %v, files %v", s.Env, s.Files)
	}

	w.Shard = &ShardWork{RunTaskID: "nightly", Index: 5, Total: 4, Retry: true, Tests: []string{"checkout works"}}
	s, _ = r.spec(w, 0)
	if s.Env["VERDICT_RETRY"] != "1" || string(s.Files[TestsFile]) != "checkout works\n" {
		t.Fatalf("retry: env %v, files %q", s.Env, s.Files)
	}

	w.Shard = nil
	s, _ = r.spec(w, 0)
	if s.Files != nil || s.Env["TASK_ID"] != "nightly~s2" || s.Env["SHARD_INDEX"] != "" {
		t.Fatalf("a run of one container: env %v", s.Env)
	}
}
