import { test, expect } from '@playwright/test';

test('search finds a product', async ({ page }, testInfo) => {
  // Flaky on purpose: the first attempt finds nothing, the retry finds three products.
  const found = testInfo.retry === 0 ? 0 : 3;
  await page.setContent(`<input aria-label="Search" value="mug"><p id="count">${found} results</p>`);
  await expect(page.locator('#count')).toHaveText('3 results');
});
