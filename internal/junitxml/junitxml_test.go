package junitxml

import (
	"bytes"
	"encoding/xml"
	"testing"
)

func TestWriteJUnit(t *testing.T) {
	var b bytes.Buffer
	tests := []Test{{Name: "a", Suite: "s1", Status: "passed", DurationMs: 1500}, {Name: "b <x>", Suite: "s1", Status: "failed", Error: "boom\nat line 3"},
		{Name: "c", Suite: "s2", Status: "skipped"}, {Name: "d", Suite: "s2", Status: "flaky", Retries: 1}}
	if err := Write(&b, "run-1", tests); err != nil {
		t.Fatal(err)
	}
	var got junitSuites
	if err := xml.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if got.Tests != 4 || got.Failures != 1 || got.Skipped != 1 || len(got.Suites) != 2 || got.Suites[0].Failures != 1 ||
		got.Suites[0].Cases[1].Name != "b <x>" || got.Suites[0].Cases[1].Failure.Message != "boom" || got.Suites[0].Time != "1.500" {
		t.Fatalf("junit: %+v\n%s", got, b.String())
	}
}
