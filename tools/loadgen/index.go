package main

import "verdict/internal/domain"

// markIndexed records what the runner records at collection time: which report folders hold an
// index.html (the seeded runs' Playwright report).
func markIndexed(e *domain.Execution) { e.ReportIndexes = []string{"playwright-report"} }
