package planner

import "testing"

// BenchmarkGenerate30 writes the largest plan: 30 tests of eight steps over six suites.
func BenchmarkGenerate30(b *testing.B) {
	cases := thirty()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(cases, "playwright", "Page Object"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiscover rates 1000 cases against a history.
func BenchmarkDiscover(b *testing.B) {
	var cases []Case
	for range 34 {
		cases = append(cases, thirty()...)
	}
	h := History{Runs: 10, Tests: map[string]int{"Scenario 1 of Checkout": 2}, Suites: map[string]int{"Login": 3}}
	b.ReportAllocs()
	for b.Loop() {
		Discover(cases[:1000], h, Options{})
	}
}
