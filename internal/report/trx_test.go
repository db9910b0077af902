package report

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"verdict/internal/domain"
)

// trxSample is what `dotnet test --logger trx` writes for an xUnit project (shortened): a
// passed, a failed, a skipped test, and a test that failed and then passed on a rerun.
const trxSample = `<?xml version="1.0" encoding="utf-8"?>
<TestRun id="a1" name="runner@host 2026-11-28 14:00:00" xmlns="http://microsoft.com/schemas/VisualStudio/TeamTest/2010">
  <Results>
    <UnitTestResult executionId="e1" testId="t1" testName="Shop.Tests.CartTests.AddsItem" duration="00:00:00.0150000" outcome="Passed" />
    <UnitTestResult executionId="e2" testId="t2" testName="Shop.Tests.CartTests.Totals(count: 2)" duration="00:00:01.5000000" outcome="Failed">
      <Output>
        <ErrorInfo>
          <Message>Assert.Equal() Failure
Expected: 42
Actual:   41</Message>
          <StackTrace>   at Shop.Tests.CartTests.Totals(Int32 count) in /src/Shop.Tests/CartTests.cs:line 31</StackTrace>
        </ErrorInfo>
      </Output>
    </UnitTestResult>
    <UnitTestResult executionId="e3" testId="t3" testName="Shop.Tests.CartTests.Pays" duration="00:00:00" outcome="NotExecuted" />
    <UnitTestResult executionId="e4" testId="t4" testName="Shop.Tests.SyncTests.Drains" duration="00:00:05.0000000" outcome="Failed">
      <Output><ErrorInfo><Message>System.TimeoutException : The operation has timed out.</Message></ErrorInfo></Output>
    </UnitTestResult>
    <UnitTestResult executionId="e5" testId="t4" testName="Shop.Tests.SyncTests.Drains" duration="00:00:00.2000000" outcome="Passed" />
  </Results>
  <TestDefinitions>
    <UnitTest name="AddsItem" id="t1"><TestMethod className="Shop.Tests.CartTests" name="AddsItem" /></UnitTest>
    <UnitTest name="Totals" id="t2"><TestMethod className="Shop.Tests.CartTests" name="Totals" /></UnitTest>
    <UnitTest name="Pays" id="t3"><TestMethod className="Shop.Tests.CartTests" name="Pays" /></UnitTest>
    <UnitTest name="Drains" id="t4"><TestMethod className="Shop.Tests.SyncTests" name="Drains" /></UnitTest>
  </TestDefinitions>
</TestRun>`

func TestParseTRX(t *testing.T) {
	got, err := ParseTRX([]byte(trxSample))
	if err != nil {
		t.Fatal(err)
	}
	want := []domain.TestResult{
		{Name: "AddsItem", Suite: "Shop.Tests.CartTests", Status: domain.TestPassed, DurationMs: 15},
		{Name: "Totals(count: 2)", Suite: "Shop.Tests.CartTests", Status: domain.TestFailed, DurationMs: 1500,
			Error: "Assert.Equal() Failure\nExpected: 42\nActual:   41\n   at Shop.Tests.CartTests.Totals(Int32 count) in /src/Shop.Tests/CartTests.cs:line 31"},
		{Name: "Pays", Suite: "Shop.Tests.CartTests", Status: domain.TestSkipped},
		{Name: "Drains", Suite: "Shop.Tests.SyncTests", Status: domain.TestFlaky, DurationMs: 200, Retries: 1,
			Error: "System.TimeoutException : The operation has timed out."},
	}
	if len(got) != len(want) {
		t.Fatalf("%d tests, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("test %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if _, err := ParseTRX([]byte(`<testsuite name="x"/>`)); !errors.Is(err, ErrUnrecognized) {
		t.Errorf("a JUnit file read as TRX: %v", err)
	}
	if _, err := ParseTRX([]byte("not xml")); !errors.Is(err, ErrUnrecognized) {
		t.Errorf("garbage: %v", err)
	}
}

// TestParseFSReadsTRX: a .NET suite's .trx results answer for the run when no JUnit file does;
// with both, JUnit answers (the same tests written twice).
func TestParseFSReadsTRX(t *testing.T) {
	got, err := ParseFS(fstest.MapFS{"TestResults/runner_host.trx": {Data: []byte(trxSample)}})
	if err != nil || len(got) != 4 || got[1].Status != domain.TestFailed {
		t.Fatalf("%v %+v", err, got)
	}
	junit := `<testsuite name="Shop.Tests"><testcase classname="Shop.Tests.CartTests" name="AddsItem"/></testsuite>`
	got, err = ParseFS(fstest.MapFS{"TestResults/r.trx": {Data: []byte(trxSample)}, "TestResults/junit.xml": {Data: []byte(junit)}})
	if err != nil || len(got) != 1 {
		t.Fatalf("with JUnit beside: %v %+v", err, got)
	}
}

func FuzzParseTRX(f *testing.F) {
	f.Add([]byte(trxSample))
	f.Add([]byte(`<TestRun><Results><UnitTestResult testId="a" outcome="Failed"/></Results></TestRun>`))
	f.Add([]byte(`<TestRun>` + strings.Repeat("<a>", 100)))
	f.Fuzz(func(t *testing.T, data []byte) {
		tests, _ := ParseTRX(data)
		for _, r := range tests {
			if len(r.Name) > maxTextBytes+4 || len(r.Error) > maxErrorBytes+4 {
				t.Fatalf("unbounded result %+v", r)
			}
		}
	})
}
