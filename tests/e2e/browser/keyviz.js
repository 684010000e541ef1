// keyviz.js: drives Debian's chromium (playwright-core) through the proxy's
// /keyviz page; prints what it saw as one JSON line for
// tests/e2e/test_keyviz_browser.py to judge.
//
//   node keyviz.js ORIGIN USER_DATA_DIR SCREENSHOT.png SECOND_TABLE
'use strict';

const { chromium } = require('playwright-core');

async function main() {
  const [origin, userDataDir, shot, otherTable] = process.argv.slice(2);
  const out = { requests: [], foreign: [], errors: [] };
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 720 },
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
           '--disable-component-update', '--disable-sync',
           '--no-first-run'],
  });
  try {
    // every request any page of the context makes: only the proxy's
    context.on('request', (r) => {
      out.requests.push(r.url());
      if (!r.url().startsWith(origin + '/')) out.foreign.push(r.url());
    });
    const page = context.pages()[0] || await context.newPage();
    page.on('pageerror', (e) => out.errors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') out.errors.push(m.text());
    });
    await page.goto(origin + '/keyviz', { waitUntil: 'load' });
    await page.waitForFunction(() => {
      const c = document.getElementById('heatmap');
      return Number(c.getAttribute('data-cells') || 0) > 0;
    }, null, { timeout: 20000 });
    out.cells = await page.evaluate(() => window.keyvizCells.length);
    // the canvas holds coloured pixels, not only white
    out.coloured = await page.evaluate(() => {
      const c = document.getElementById('heatmap');
      const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) {
        if (d[i] !== 255 || d[i + 1] !== 255 || d[i + 2] !== 255) n++;
      }
      return n;
    });
    // hover the hottest cell of the busiest column whose boundaries
    // follow the keys (the first columns split by first byte and hold
    // the whole workload in two cells): its tooltip names its key range
    const cell = await page.evaluate(() => {
      const total = [], used = [];
      for (const c of window.keyvizCells) {
        total[c.iv] = (total[c.iv] || 0) + c.value;
        used[c.iv] = (used[c.iv] || 0) + (c.value > 0 ? 1 : 0);
      }
      let col = -1;
      for (let i = 0; i < total.length; i++) {
        if (used[i] > 4 && (col < 0 || total[i] > total[col])) col = i;
      }
      let best = null;
      for (const c of window.keyvizCells) {
        if (c.iv === col && (best === null || c.value > best.value)) {
          best = c;
        }
      }
      return best;
    });
    const box = await page.locator('#heatmap').boundingBox();
    const scale = box.width / 720;
    await page.mouse.move(box.x + (cell.x + cell.w / 2) * scale,
                          box.y + (cell.y + cell.h / 2) * scale);
    await page.locator('#tooltip').waitFor({ state: 'visible' });
    out.tooltip = await page.locator('#tooltip').textContent();
    // pick that interval: the hot keys and parts beside the map are then
    // its own, not the newest interval's (under load the newest may hold
    // only the workload's last few calls)
    const picked = page.waitForResponse(
      (r) => r.url().includes('/hotkeys.json') && r.url().includes('at='));
    await page.mouse.click(box.x + (cell.x + cell.w / 2) * scale,
                           box.y + (cell.y + cell.h / 2) * scale);
    await picked;
    await page.waitForTimeout(200);
    out.hotkeys = await page.locator('#hotkeys tr').count();
    out.hotparts_first = await page.locator('#hotparts tr:nth-child(2) td.k')
      .first().textContent();
    out.bucket_bars = await page.locator('#buckets .bucket').count();
    out.advice = await page.locator('#advice li').count();
    await page.screenshot({ path: shot, fullPage: true });
    // another metric: the page asks for it and draws again
    const reads = page.waitForResponse(
      (r) => r.url().includes('metric=reads'));
    await page.selectOption('#metric', 'reads');
    await reads;
    out.metric_status = await page.locator('#status').textContent();
    // another table: its data, its hot keys
    const other = page.waitForResponse(
      (r) => r.url().includes('table=' + otherTable));
    await page.selectOption('#table', otherTable);
    await other;
    await page.waitForFunction((t) => {
      const r = document.querySelector('#hotkeys tr:nth-child(2) td.k');
      return r !== null && r.textContent.startsWith(t);
    }, 'w-', { timeout: 10000 });
    out.table_after = await page.locator('#table').inputValue();
    out.other_hotkey = await page.locator('#hotkeys tr:nth-child(2) td.k')
      .textContent();
  } finally {
    await context.close();
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack || e) + '\n');
  process.exit(1);
});
