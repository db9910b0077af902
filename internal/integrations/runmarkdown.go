package integrations

import "verdict/internal/domain"

// RunMarkdown is the Markdown story of a finished run that Linear's issues tell (status, counts,
// failing tests with their messages, analysis, report link), for other Markdown readers such
// as a pull-request comment.
func RunMarkdown(e *domain.Execution, reportURL string) string {
	return describe(e, reportURL).markdown("")
}
