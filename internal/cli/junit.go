package cli

// testResult is a parsed test as the execution view lists it.
type testResult struct {
	Name       string `json:"name"`
	Suite      string `json:"suite"`
	Status     string `json:"status"` // passed, failed, skipped, flaky
	DurationMs int64  `json:"durationMs"`
	Error      string `json:"error"`
	Retries    int    `json:"retries"`
}
