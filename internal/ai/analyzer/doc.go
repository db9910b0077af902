// Package analyzer is Verdict's built-in failure analyser: it explains a failed run from its
// parsed tests, its exit code and the tail of its log, without a model and without I/O. The
// caller supplies what the organization already knows (the history of failure signatures and
// the triages people made), so the analyser stays pure and cheap to test.
//
// The pipeline:
//
//  1. Signatures. Each failed (or retried) test's message and stack are normalised (numbers,
//     ids, addresses, temp paths, ports, durations and timestamps replaced; repeated lines
//     and deep frames dropped) into a text that is the same for the same failure in every
//     run, and hashed into a short signature. Signatures and TestKeys tell the caller what to
//     look up.
//  2. Rules. An ordered table of rules reads each failure's text and decides a category
//     (environment, test bug, product bug) with the rule and the text that matched as
//     evidence. Order matters: a page that never loaded explains a locator that was never
//     found, so network rules come before locator rules, and those before assertions.
//  3. History and triage. A person's triage of the same signature (or of a near one, by word
//     similarity) overrides the rules; a test passed on retry, or one whose recent outcomes
//     alternate, is flaky. Occurrences and the run a signature was first seen in come from
//     the caller's history.
//  4. Finding. Per-failure categories are weighed into one run-level category (an OOM kill or a
//     run without results decides alone), and the summary, root cause, suggested fix and
//     confidence are written from the evidence. Evidence is the bounded, structured input a
//     model provider is given to do better.
package analyzer
