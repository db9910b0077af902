// Playwright as Verdict runs it: Debian's Chromium instead of a downloaded browser, and the
// reporters whose output Verdict reads from the container's /app after the run.
import { defineConfig } from '@playwright/test';

export default defineConfig({
  testDir: './tests',
  // One retry: a test that fails, then passes, is "flaky" in the JSON report, and Verdict
  // counts it so (the run is UNSTABLE, not FAILED).
  retries: 1,
  // A short expect timeout keeps the failing example quick; real suites keep the default 5 s.
  expect: { timeout: 2000 },
  reporter: [
    ['list'],
    // /app/playwright-report: the HTML report, served by Verdict with its screenshots and traces.
    ['html', { outputFolder: 'playwright-report', open: 'never' }],
    // /app/results: the per-test results. Verdict prefers the JSON reporter (it alone keeps
    // retries); the JUnit file is for tools that read only JUnit.
    ['json', { outputFile: 'results/results.json' }],
    ['junit', { outputFile: 'results/junit.xml' }],
  ],
  // Traces and screenshots of failed attempts; the HTML report links them.
  outputDir: 'test-results',
  use: {
    browserName: 'chromium',
    // Debian's Chromium (package chromium), not Playwright's download
    // (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 in the image).
    launchOptions: { executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium' },
    // The target Verdict passes to every run (a project's environment URL).
    baseURL: process.env.BASE_URL,
    trace: 'retain-on-failure',
    screenshot: 'only-on-failure',
  },
});
