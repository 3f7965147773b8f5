// Browser tests of the relay HUD: a real relay on a seeded store, driven by Playwright
// (playwright-core) in Debian's chromium. Run by scripts/test; needs build/ootci.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import net from 'node:net';
import { chromium } from 'playwright-core';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const build = process.env.OOTCI_BUILD_DIR || join(root, 'build');
const ootci = join(build, 'ootci');
const shots = join(build, 'hud-screenshots');
let relay, browser, base, dir, seeded;

const freePort = () => new Promise((ok) => {
  const s = net.createServer().listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => ok(p)); });
});

async function api(path) {
  const res = await fetch(base + path);
  assert.equal(res.status, 200, `${path} answered ${res.status}`);
  return res.json();
}

// Opens a page and fails on any console error, uncaught exception or dialog (an XSS would open one).
async function open(path, name) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(`console: ${m.text()}`); });
  page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
  page.on('dialog', async (d) => { problems.push(`dialog: ${d.message()}`); await d.dismiss(); });
  const res = await page.goto(base + path);
  assert.equal(res.status(), 200, `${path} answered ${res.status()}`);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  page.problems = problems;
  return page;
}

// Numbers print as the API holds them: "98.9%", "5.9 min", "1203"; "–" is null.
const shown = (text) => (text.trim() === '–' ? null : parseFloat(text));
async function numberAt(page, selector) {
  return shown(await page.locator(selector).first().innerText());
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ootci-hud-'));
  mkdirSync(shots, { recursive: true });
  const out = execFileSync(ootci, ['relay', 'seed', '--store', `sqlite:${dir}/hud.db`, '--backends', '5',
    '--deliveries', '2400', '--days', '120', '--xss-probe', '--pending-demotion', '--allowlist-out', `${dir}/allowlist.yml`],
    { encoding: 'utf8' });
  seeded = { busiestPr: Number(/busiest PR #(\d+)/.exec(out)[1]) };
  const port = await freePort();
  writeFileSync(`${dir}/relay.yaml`, `listen: 127.0.0.1:${port}\nstore: sqlite:hud.db\nallowlist: allowlist.yml\n` +
    `webhook_secret_env: HUD_TEST_SECRET\n` +
    // 120 days seeded, 90 kept: the sweeper prunes the oldest 30 at start.
    `hud:\n  l4_criteria: {at_l3_days: 30, pass_rate_percent: 95, timeout_rate_percent: 1}\n`);
  relay = spawn(ootci, ['relay', 'serve', '--config', `${dir}/relay.yaml`], {
    env: { ...process.env, HUD_TEST_SECRET: 'x' }, stdio: 'ignore' });
  base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    try { if ((await (await fetch(base + '/api/crcr/summary')).json()).detail_since_ms > 0) break; } catch {}
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
  });
});

after(async () => {
  await browser?.close();
  relay?.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

test('summary page: numbers equal the API, chips follow the thresholds', async () => {
  const summary = await api('/api/crcr/summary?range=30d');
  const page = await open('/crcr?range=30d', 'summary');
  let rows = 0;
  for (const section of summary.sections) {
    for (const b of section.backends) {
      if (section.level === 'L1') {
        assert.equal(await page.locator(`li[data-repo="${b.repo}"]`).count(), 1);
        continue;
      }
      const row = `tr[data-repo="${b.repo}"]`;
      for (const key of ['pass_rate', 'pass_rate_excluding_upstream', 'jobs', 'failures', 'timed_out', 'avg_queue_min', 'avg_exec_min'])
        assert.equal(await numberAt(page, `${row} [data-key="${key}"]`), b[key], `${b.repo} ${key}`);
      const chip = await page.locator(`${row} .chip`).getAttribute('class');
      assert.ok(chip.includes(b.chip), `${b.repo}: chip ${chip} vs ${b.chip}`);
      const expected = b.pass_rate === null ? 'grey' : b.pass_rate >= 95 ? 'green' : b.pass_rate >= 80 ? 'yellow' : 'red';
      assert.equal(b.chip, expected);
      rows++;
    }
  }
  assert.ok(rows >= 4, 'seeded L2–L4 backends are shown');
  assert.equal(await numberAt(page, '#health [data-key="outbox_pending"]'), summary.health.outbox_pending);
  const nightly = await open('/crcr?tab=nightly&range=7d', 'summary-nightly');
  assert.deepEqual(page.problems, []);
  assert.deepEqual(nightly.problems, []);
});

test('an L3 backend is measured against the L4 criteria; retention says where job detail begins', async () => {
  const repo = 'seed-org/backend-2';
  const data = await api(`/api/crcr/repo/${repo}?range=30d`);
  assert.equal(data.readiness.target, 'L4');
  assert.deepEqual(data.readiness.criteria.map((c) => c.name), ['At L3', 'Pass rate (30 days)', 'Timeout rate (7 days)']);
  const page = await open(`/crcr/${repo}?range=30d`, 'backend-l3');
  assert.match(await page.locator('h2', { hasText: 'readiness' }).innerText(), /^L4 readiness/);
  const rows = await page.locator('#readiness tr').evaluateAll((trs) => trs.slice(1).map((t) =>
    [...t.cells].map((c) => c.innerText)));
  assert.deepEqual(rows.map((r) => r.slice(0, 3)), data.readiness.criteria.map((c) => [c.name, c.target, c.display]));
  assert.deepEqual(rows.map((r) => r[3] === 'pass'), data.readiness.criteria.map((c) => c.pass));
  // L4 is the top: no criteria, a note.
  const top = await open('/crcr/seed-org/backend-1?range=30d', 'backend-l4');
  assert.equal(await top.locator('#readiness-note').innerText(), 'At L4, the highest level.');
  // The sweeper pruned the rows older than 90 days at start; every aggregate page says so.
  const summary = await api('/api/crcr/summary?range=30d');
  const ninety = Date.now() - 90 * 86400000;
  assert.ok(Math.abs(summary.detail_since_ms - ninety) < 600000, 'detail begins 90 days back');
  for (const [path, name] of [['/crcr?range=30d', 'summary-detail'], ['/crcr/metrics?days=90', 'metrics-detail'], [`/crcr/${repo}`, 'backend-detail']]) {
    const p = await open(path, name);
    assert.equal(Number(await p.locator('#detail-since').getAttribute('data-ms')), summary.detail_since_ms, path);
    assert.match(await p.locator('#detail-since').innerText(), /^Job detail begins \d{4}-\d\d-\d\dT/);
    assert.deepEqual(p.problems, []);
  }
  assert.deepEqual(page.problems, []);
  assert.deepEqual(top.problems, []);
});

test('backend page: stat cards, readiness and the PR x job matrix with pagination', async () => {
  const repo = 'seed-org/backend-3';
  const data = await api(`/api/crcr/repo/${repo}?range=30d`);
  const page = await open(`/crcr/${repo}?range=30d`, 'backend');
  for (const key of ['pass_rate', 'prs', 'failures', 'timed_out', 'avg_queue_min', 'avg_exec_min',
    'timeout_rate', 'e2e_p50_min', 'e2e_p95_min', 'overrun_rate'])
    assert.equal(await numberAt(page, `#stats [data-key="${key}"]`), data.stats[key], key);
  const flags = await page.locator('#readiness td[data-pass]').evaluateAll((tds) => tds.map((t) => t.dataset.pass === 'true'));
  assert.deepEqual(flags, data.readiness.criteria.map((c) => c.pass));
  const prs = () => page.locator('#matrix tr[data-pr]').evaluateAll((trs) => trs.map((t) => Number(t.dataset.pr)));
  assert.deepEqual(await prs(), data.matrix.rows.map((r) => r.pr));
  assert.ok(data.matrix.pages > 1, 'enough PRs to paginate');
  await page.click('#next');
  await page.waitForURL(/page=2/);
  const page2 = await api(`/api/crcr/repo/${repo}?range=30d&page=2`);
  assert.deepEqual(await prs(), page2.matrix.rows.map((r) => r.pr));
  assert.equal(await numberAt(page, '[data-key="page"]'), 2);
  assert.notDeepEqual(page2.matrix.rows.map((r) => r.pr), data.matrix.rows.map((r) => r.pr));
  await page.screenshot({ path: join(shots, 'backend-page2.png'), fullPage: true });
  const nightly = await open(`/crcr/${repo}?tab=nightly&range=30d`, 'backend-nightly');
  const runs = await api(`/api/crcr/repo/${repo}?tab=nightly&range=30d`);
  assert.equal(await numberAt(nightly, '[data-key="total_runs"]'), runs.runs.total);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(nightly.problems, []);
});

test('downstream values are escaped: a job named <script> shows as text', async () => {
  const repo = 'seed-org/backend-1';
  const page = await open(`/crcr/${repo}?range=24h`, 'xss-matrix');
  const headers = await page.locator('#matrix th').allInnerTexts();
  assert.ok(headers.includes('CI/<script>alert(1)</script>'), headers.join(' | '));
  assert.equal(await page.locator('a[href^="javascript:"]').count(), 0);
  const key = (await api(`/api/crcr/repo/${repo}?range=24h`)).matrix.rows
    .flatMap((r) => Object.values(r.cells)).find((c) => c.job.startsWith('<script>')).key;
  const job = await open(`/crcr/job?key=${encodeURIComponent(key)}`, 'xss-job');
  assert.equal(await job.locator('.failed-test b').first().innerText(), '<img src=x onerror=alert(2)>');
  assert.ok((await job.locator('.failed-test pre').allInnerTexts()).includes('</pre><script>alert(3)</script>'));
  assert.equal(await job.locator('img').count(), 0);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(job.problems, []);
});

test('job drill-down shows failed tests and the triage verdict', async () => {
  const data = await api('/api/crcr/repo/seed-org/backend-4?range=30d');
  const failed = data.matrix.rows.flatMap((r) => Object.values(r.cells)).find((c) => c.has_verdict);
  assert.ok(failed, 'a failed job with a verdict on page 1');
  const job = await api(`/api/crcr/job?key=${encodeURIComponent(failed.key)}`);
  const page = await open(`/crcr/job?key=${encodeURIComponent(failed.key)}`, 'job');
  assert.equal(await numberAt(page, '[data-key="failed_tests"]'), job.failed_tests.length);
  assert.equal(await page.locator('.failed-test').count(), job.failed_tests.length);
  assert.ok((await page.locator('#verdict').innerText()).includes(job.triage_verdict.category));
  assert.equal(await numberAt(page, '[data-key="passed"]'), job.tests.passed);
  assert.deepEqual(page.problems, []);
});

test('metrics page: charts render and totals equal the API series', async () => {
  const data = await api('/api/crcr/metrics?days=30');
  const page = await open('/crcr/metrics?days=30', 'metrics');
  assert.equal(await page.locator('svg polyline').count(), 3 * data.backends.length);
  for (const b of data.backends) {
    const runs = b.points.reduce((s, p) => s + p.runs, 0);
    const failures = b.points.reduce((s, p) => s + p.failures, 0);
    assert.equal(await numberAt(page, `tr[data-repo="${b.repo}"] [data-key="runs"]`), runs);
    assert.equal(await numberAt(page, `tr[data-repo="${b.repo}"] [data-key="failures"]`), failures);
  }
  for (const days of [7, 14, 90]) {
    const p = await open(`/crcr/metrics?days=${days}`, `metrics-${days}`);
    assert.deepEqual(p.problems, []);
  }
  assert.deepEqual(page.problems, []);
});

test('PR page: one box per backend with its jobs', async () => {
  const data = await api(`/api/crcr/pr/${seeded.busiestPr}`);
  const page = await open(`/pr/${seeded.busiestPr}`, 'pr');
  assert.ok(data.backends.length >= 3);
  assert.equal(await page.locator('.box[data-repo]').count(), data.backends.length);
  for (const b of data.backends) {
    const box = page.locator(`.box[data-repo="${b.repo}"]`);
    assert.equal(await box.locator('tr').count(), b.jobs.length + 1);
    assert.equal(await box.locator('.badge').innerText(), b.level);
  }
  assert.deepEqual(page.problems, []);
});

// The rows of a #level-status table: per repo (tbody), per criterion, what the page shows.
async function levelRows(page) {
  return page.locator('#level-status tbody').evaluateAll((bodies) => bodies.map((b) => ({
    repo: b.dataset.repo,
    change: b.dataset.change,
    criteria: [...b.rows].map((r) => ({
      criterion: r.dataset.criterion,
      measured: r.cells[5].innerText,
      target: r.cells[6].innerText,
      met: r.cells[7].dataset.met === 'null' ? null : r.cells[7].dataset.met === 'true',
    })),
  })));
}
const apiRows = (repos) => repos.map((r) => ({ repo: r.repo, change: r.change ?? '', criteria: r.criteria }));

test('level status: the summary table is /api/crcr/level-status, promotion and demotion', async () => {
  const res = await fetch(base + '/api/crcr/level-status', { method: 'POST' });
  assert.equal(res.status, 405);
  assert.deepEqual(await res.json(), { error: 'Method not allowed' });
  const status = await api('/api/crcr/level-status');
  assert.deepEqual(status.repos.map((r) => [r.repo, r.level, r.windowDays]),
    [['seed-org/backend-2', 'L3', 7], ['seed-org/backend-3', 'L2', 14], ['seed-org/backend-4', 'L2', 14]]);
  for (const r of status.repos) {
    assert.deepEqual(Object.keys(r).sort(), ['change', 'criteria', 'demotionPr', 'level', 'noData', 'repo', 'windowDays']);
    for (const c of r.criteria) assert.deepEqual(Object.keys(c).sort(), ['criterion', 'measured', 'met', 'target']);
  }
  assert.deepEqual(status.repos[0].criteria.map((c) => c.criterion),
    ['End-to-End Time (P50)', 'Timeout Rate', 'Job Pass Rate']);
  assert.deepEqual(status.repos[1].criteria.map((c) => c.target),
    ['≥ 1 month', '< 3 h', '< 3 h', '< 30 min', '< 1%', '≥ 90%']);
  const page = await open('/crcr', 'summary-levels');
  assert.deepEqual(await levelRows(page), apiRows(status.repos));
  assert.deepEqual(page.problems, []);
});

test('demotion banner: an open demotion PR turns check runs off, and the page says why', async () => {
  const repo = 'seed-org/backend-2';
  const data = await api(`/api/crcr/repo/${repo}`);
  const pr = data.level_status.demotionPr;
  assert.equal(pr.number, 4242);
  const page = await open(`/crcr/${repo}`, 'backend-demotion');
  const banner = page.locator('#demotion-banner');
  assert.equal(Number(await banner.getAttribute('data-pr')), pr.number);
  assert.match(await banner.innerText(), /^Check runs are off: demotion PR #4242 has been open since \d{4}-/);
  assert.equal(await banner.locator('a').getAttribute('href'), pr.url);
  assert.deepEqual(await levelRows(page), apiRows([data.level_status]));
  // The summary's table says the same.
  const summary = await open('/crcr', 'summary-demotion');
  assert.match(await summary.locator(`#level-status tbody[data-repo="${repo}"] tr`).first().innerText(), /PR #4242 open/);
  // No demotion, no banner; an L2 backend's page shows its promotion check.
  const l2 = await open('/crcr/seed-org/backend-3', 'backend-promotion');
  assert.equal(await l2.locator('#demotion-banner').count(), 0);
  const l2data = await api('/api/crcr/repo/seed-org/backend-3');
  assert.deepEqual(await levelRows(l2), apiRows([l2data.level_status]));
  for (const key of ['pass_rate_excluding_upstream', 'upstream_failures'])
    assert.equal(await numberAt(l2, `#stats [data-key="${key}"]`), l2data.stats[key], key);
  assert.ok(l2data.stats.pass_rate_excluding_upstream >= l2data.stats.pass_rate);
  assert.deepEqual(page.problems, []);
  assert.deepEqual(summary.problems, []);
  assert.deepEqual(l2.problems, []);
});

test('the PR page shows each job\'s triage verdict', async () => {
  const data = await api(`/api/crcr/pr/${seeded.busiestPr}`);
  const page = await open(`/pr/${seeded.busiestPr}`, 'pr-verdicts');
  let verdicts = 0;
  for (const b of data.backends) {
    const cells = await page.locator(`.box[data-repo="${b.repo}"] td[data-key="verdict"]`).allInnerTexts();
    assert.deepEqual(cells, b.jobs.map((j) => (j.verdict ? `${j.verdict.category} (${j.verdict.confidence})` : '')));
    verdicts += b.jobs.filter((j) => j.verdict).length;
  }
  assert.ok(verdicts > 0, 'the busiest PR has failures with a verdict');  // or the loop proves nothing
  assert.deepEqual(page.problems, []);
});

test('nightly freshness on the summary page equals the API', async () => {
  const summary = await api('/api/crcr/summary');
  const page = await open('/crcr', 'summary-nightly-freshness');
  assert.ok(summary.nightly_freshness.length >= 4);
  for (const f of summary.nightly_freshness) {
    const row = `#nightly-freshness tr[data-nightly-repo="${f.repo}"]`;
    assert.equal(await numberAt(page, `${row} [data-key="age_h"]`), f.age_h);
    assert.equal(await page.locator(`${row} [data-key="stale"]`).innerText(), f.stale ? 'degraded' : 'healthy');
  }
  assert.deepEqual(page.problems, []);
});

test('the API validates its parameters and serves the allowlist as CRCR does', async () => {
  assert.equal((await fetch(base + '/api/crcr/summary?range=1y')).status, 400);
  assert.equal((await fetch(base + '/api/crcr/metrics?days=3')).status, 400);
  assert.equal((await fetch(base + '/api/crcr/job?key=nope')).status, 404);
  const allow = await api('/api/crcr/allowlist');
  assert.deepEqual(Object.keys(allow).sort(), ['L1', 'L2', 'L3', 'L4']);
  assert.equal(allow.L4[0].repo, 'seed-org/backend-1');
});
