const { chromium } = require(process.env.PLAYWRIGHT_CORE || 'playwright-core');
(async () => {
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ['--no-sandbox'] });
  const context = await browser.newContext();
  await context.tracing.start({ snapshots: true, screenshots: false, sources: false, title: 'checkout pays' });
  const page = await context.newPage();
  await page.setContent(`<!doctype html><title>Checkout</title><h1>Checkout</h1>
<script>window.ran = 1</script>
<img src=x onerror="window.bad=1">
<button onclick="document.querySelector('#total').textContent='Total: 42'">Pay now</button><p id=total>Total: 0</p>`);
  await page.getByRole('button', { name: 'Pay now' }).click();
  await page.locator('#total').textContent();
  await context.tracing.stop({ path: 'trace.zip' });
  await browser.close();
})().catch(e => { console.error(e); process.exit(1); });
