// Package planner is Verdict's built-in automation planner: it reads a project's manual test
// cases and turns them into a plan for automating them, without a model and without I/O. The
// caller supplies the cases (and, for discovery, the project's recent failure history), so
// the planner stays pure, deterministic and cheap to test.
//
// It works in two stages:
//
//  1. Discover groups the cases by suite and gives every test and every suite a risk level,
//     CRITICAL, HIGH, MEDIUM or LOW, with a one-sentence rationale per suite naming its
//     evidence ("3 of 5 tests touch checkout and payment; 2 failed in the last 10 runs").
//  2. Generate writes, for at most MaxTests selected cases, a framework and a design pattern,
//     a Markdown strategy document of six sections (Sections): an executive summary, the
//     prerequisites and environment setup, the folder and file structure, a coverage map of
//     every selected test, implementation notes drawn from the steps, and one master coding
//     prompt in a fenced block that carries the tests and their steps as JSON.
//
// A hosted model may write the document instead (ModelInput gives its fixed instructions and
// its data); Validate checks that such a document has the six sections and maps every
// selected test, so a caller keeps Generate's document when it does not.
//
// # Risk scoring
//
// A test's score is the sum of four parts (Assess):
//
//   - Priority: critical 45, high 30, medium 15, low 0; a case without a priority (or with
//     one the planner does not know) counts as medium.
//   - Areas: words of three risky areas, matched as whole words (and their plurals and -ed,
//     -ing forms) in the title, tags, preconditions and steps. Payments (payment, checkout,
//     billing, invoice, refund, subscription, cart…) weigh 30, security (login, auth,
//     password, permission, role, session, token, MFA…) 30, data (delete, data loss,
//     export, import, backup, restore, PII, GDPR…) 25. An area found in the title or the
//     tags counts fully, one found only in the preconditions or steps counts half. The
//     strongest area counts, and every further area adds 10, up to 45 in all.
//   - Release tags: a tag saying the test gates a release (smoke, sanity, critical, p0,
//     blocker) adds 10.
//   - History: each failure of a test of that title in the project's recent runs adds 10,
//     up to 30.
//
// The level follows from the score: 70 and above is CRITICAL, 40 HIGH, 15 MEDIUM, below that
// LOW. So a critical test is at least HIGH, and CRITICAL once it also touches a risky area
// or keeps failing; a low-priority test touching login in one step is MEDIUM.
//
// A suite's score is the score of its riskiest test, plus 5 for each failure the history
// counts against the suite, up to 20: a suite is as risky as its riskiest flow, and more so
// when it keeps failing.
package planner
