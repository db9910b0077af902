// A small shop's pages, rendered with setContent so the recipe runs without a target; a real
// suite opens its pages with page.goto('/cart'), relative to BASE_URL.
import { test, expect } from '@playwright/test';

const page = (body: string) => `<!doctype html><html><head><title>Shop</title></head><body>${body}</body></html>`;

test('home page shows the shop name', async ({ page: p }) => {
  await p.setContent(page('<h1>Verdict Shop</h1><a href="#cart">Cart</a>'));
  await expect(p.getByRole('heading', { level: 1 })).toHaveText('Verdict Shop');
});

test('cart adds an item', async ({ page: p }) => {
  await p.setContent(page(`<button onclick="document.querySelector('#n').textContent = '1'">Add</button>
    <p>Items: <span id="n">0</span></p>`));
  await p.getByRole('button', { name: 'Add' }).click();
  await expect(p.locator('#n')).toHaveText('1');
});

test('checkout shows the order total', async ({ page: p }) => {
  // Fails on purpose: the page shows 40.00, the test expects 42.00 (a clear expected/received).
  await p.setContent(page('<h1>Checkout</h1><p id="total">Total: 40.00 EUR</p>'));
  await expect(p.locator('#total')).toHaveText('Total: 42.00 EUR');
});
