package domain

import "time"

// AutomationPlan is a saved automation strategy: the Markdown document the planner wrote for
// a project's selected manual tests, in a framework and a design pattern.
type AutomationPlan struct {
	ID             string
	OrganizationID string
	ProjectID      string
	Framework      string
	DesignPattern  string
	TestIDs        []string // the selected test cases, in the order given
	Markdown       string
	Provider       string // builtin, openai, gemini, anthropic: who wrote it
	Model          string
	CreatedBy      string // the user's ID
	CreatedAt      time.Time
}
