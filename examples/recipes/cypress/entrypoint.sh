#!/bin/sh
# Verdict's container contract for Cypress: $1 is a folder under /app/cypress/e2e (`all` or
# empty: every spec). With VERDICT_TESTS_FILE (a sharded run) the listed spec files run.
# Results: the reporter configured in cypress.config.js, e.g.
#   reporter: 'mocha-junit-reporter',
#   reporterOptions: { mochaFile: 'cypress/results/results-[hash].xml' },
set -eu
cd /app
folder=${1:-all}
spec=cypress/e2e/**/*.cy.js
[ "$folder" = all ] || spec="cypress/e2e/$folder/**/*.cy.js"
if [ -n "${VERDICT_TESTS_FILE:-}" ]; then
	spec=$(paste -sd, "$VERDICT_TESTS_FILE")
fi
exec npx cypress run --browser chromium --spec "$spec"
