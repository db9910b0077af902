package kubernetes

import (
	"testing"

	"verdict/internal/run"
)

// TestShardFiles: a shard's lists of tests ride in the run's Secret under keys that are no
// variable's, and are mounted read-only at /verdict in the suite's container only.
func TestShardFiles(t *testing.T) {
	spec := testSpec()
	spec.Files = map[string][]byte{run.TestsFile: []byte("a.spec.ts\n"), run.AllTestsFile: []byte("a.spec.ts\nb.spec.ts\n")}
	sec := secretFor(spec, "runs")
	if len(sec.Data) != 2 || sec.StringData["TOKEN"] != "s3cret" {
		t.Fatalf("secret data %v, string data %v", sec.Data, sec.StringData)
	}
	job := jobFor(spec, Options{Namespace: "runs"}, run.Resources{})
	pod := job.Spec.Template.Spec
	var vol *int
	for i, v := range pod.Volumes {
		if v.Secret != nil {
			vol = &i
			if v.Secret.SecretName != spec.Name || len(v.Secret.Items) != 2 {
				t.Fatalf("files volume %+v", v)
			}
			paths := map[string][]byte{}
			for _, it := range v.Secret.Items {
				paths["/verdict/"+it.Path] = sec.Data[it.Key]
			}
			for name, want := range spec.Files {
				if string(paths[name]) != string(want) {
					t.Fatalf("%s holds %q, want %q", name, paths[name], want)
				}
			}
		}
	}
	if vol == nil {
		t.Fatal("no volume of the run's files")
	}
	mounted := 0
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if m.Name == pod.Volumes[*vol].Name {
				if c.Name != suiteContainer || m.MountPath != "/verdict" || !m.ReadOnly {
					t.Fatalf("mount %+v in %s", m, c.Name)
				}
				mounted++
			}
		}
	}
	if mounted != 1 {
		t.Fatalf("the files are mounted %d times", mounted)
	}
	// A run without files has no such volume.
	for _, v := range jobFor(testSpec(), Options{Namespace: "runs"}, run.Resources{}).Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			t.Fatalf("a run without files got %+v", v)
		}
	}
}
