// Browser test of the run report (report.html): two real `ootci run`s of the reference backend on
// upstream test_reductions.py variants, the second with fault switches (argmax missing, argmin
// crashing the process, amin failing once), opened from the run folder in Debian's chromium.
// The numbers on the page are checked against the evidence store (read with Python's sqlite3),
// and no request may leave the page. Run by scripts/test; needs build/ootci and the upstream tree.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, mkdirSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runWithReport, sqlRows } from './run_helpers.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const build = process.env.OOTCI_BUILD_DIR || join(root, 'build');
const ootci = join(build, 'ootci');
const shots = join(build, 'report-screenshots');
const backend = join(root, 'examples', 'reference-backend');
let browser, dir, runs;

// scripts/setup records the upstream tree in the build's cache.
function torchRoot() {
  if (process.env.TORCH_ROOT) return process.env.TORCH_ROOT;
  const m = /^OOTCI_TORCH_ROOT:PATH=(.*)$/m.exec(readFileSync(join(build, 'CMakeCache.txt'), 'utf8'));
  assert.ok(m && m[1], 'no OOTCI_TORCH_ROOT in the build cache: run scripts/setup');
  return m[1];
}

function config(faults) {
  const configs = readdirSync(join(backend, 'configs')).filter((c) => c.endsWith('.yaml')).map((c) => `  - ${join(backend, 'configs', c)}`);
  const env = Object.entries(faults).map(([k, v]) => `    ${k}: "${v}"`).join('\n');
  writeFileSync(join(dir, 'ootci.yaml'), `backend:\n  name: reference\n  device_type: privateuseone\n` +
    `  python: /usr/bin/python3\n  modules: [ootci_reference_backend]\n  pythonpath: [${backend}]\n` +
    `  env:\n${env || '    OOTCI_REF_DISABLED_OPS: ""'}\n` +
    `upstream:\n  torch_root: ${torchRoot()}\n  device_root: ${backend}\n` +
    `test_configs:\n${configs.join('\n')}\nworkspace: ${dir}/ws\n`);
}

function run(selection = 'select.json') {
  return runWithReport(ootci, ['run', '--config', join(dir, 'ootci.yaml'), '--select', join(dir, selection)]);
}

// The evidence store as SQL sees it.
function sql(query, ...args) {
  return sqlRows(join(dir, 'ws', 'evidence.db'), query, ...args);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ootci-report-'));
  mkdirSync(shots, { recursive: true });
  writeFileSync(join(dir, 'select.json'),
    JSON.stringify({ bases: ['test/test_reductions.py::TestReductions::test_ref_small_input'] }));
  config({});
  const green = run();
  config({ OOTCI_REF_DISABLED_OPS: 'argmax', OOTCI_REF_CRASH_OPS: 'argmin', OOTCI_REF_FLAKY_OPS: 'amin',
    OOTCI_REF_FLAKY_STATE: join(dir, 'flaky.state') });
  const red = run();
  // A staged selection of the green run's variants (issue 41): argmax's float32 ones first; the
  // other argmax and the amax ones in wave 2, run only when wave 1 raises.
  const ids = (where) => sql(`SELECT test_id FROM results WHERE run_id = ? AND (${where}) ORDER BY test_id`,
    green.id).map((r) => r[0]);
  const first = ids("op = 'argmax' AND dtype = 'float32'");
  const then = ids("(op = 'argmax' AND dtype != 'float32') OR op = 'amax'");
  assert.ok(first.length > 0 && then.length > 0, 'the variants of the staged selection');
  writeFileSync(join(dir, 'staged.json'), JSON.stringify({ tests: first, then: { tests: then } }));
  config({});
  const quiet = run('staged.json');  // nothing raises: wave 2 never starts
  config({ OOTCI_REF_DISABLED_OPS: 'argmax' });
  const raised = run('staged.json');
  runs = { green, red, quiet, raised, then };
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// Opens a report file; every request other than the page itself is recorded (none may happen).
async function open(path, name) {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests = [];
  page.on('request', (r) => { if (r.url() !== `file://${path}`) requests.push(r.url()); });
  page.on('dialog', async (d) => { requests.push(`dialog: ${d.message()}`); await d.dismiss(); });
  await page.goto(`file://${path}`);
  await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  page.requests = requests;
  return page;
}

const count = async (page, what) => Number(await page.locator(`[data-count="${what}"]`).innerText());

test('the red run\'s report shows the evidence store\'s numbers', async () => {
  const page = await open(runs.red.html, 'report-red');
  const byOutcome = Object.fromEntries(sql(
    'SELECT outcome, COUNT(*) FROM results WHERE run_id = ? GROUP BY outcome', runs.red.id));
  const total = Object.values(byOutcome).reduce((a, b) => a + b, 0);
  assert.equal(await count(page, 'total'), total);
  for (const o of ['passed', 'failed', 'error', 'skipped', 'xfailed'])
    assert.equal(await count(page, o), byOutcome[o] || 0, o);
  assert.ok(byOutcome.failed > 0 && byOutcome.error > 0, 'the faults made failures and crashes');
  assert.equal(await page.locator('#verdict').innerText(), 'failure');

  // The crash: argmin's variants are SIGSEGV errors, listed and grouped.
  const crashes = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND error_class = 'SIGSEGV'", runs.red.id)[0][0];
  assert.ok(crashes > 0);
  const sigsegv = page.locator('#errors tr', { hasText: 'SIGSEGV' }).first();
  assert.equal(Number(await sigsegv.locator('td').first().innerText()), crashes);

  // The flaky test: amin failed once, then passed.
  const flaky = sql('SELECT test_id FROM results WHERE run_id = ? AND flaky = 1', runs.red.id).map((r) => r[0]);
  assert.equal(flaky.length, 1);
  assert.equal(await count(page, 'flaky'), 1);
  assert.deepEqual(await page.locator('#flaky li').allInnerTexts(), flaky);

  // Newly failing since the green run: every failure, since the green run had none.
  const failing = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome IN ('failed', 'error')",
    runs.red.id)[0][0];
  assert.equal(await page.locator('#failing tr.newly').count(), failing);
  assert.equal(sql("SELECT verdict FROM runs WHERE id = ?", runs.green.id)[0][0], 'success');

  // The map: the switched-off op fails, the crashing one too, an untouched one passes.
  const cell = (op, dtype) => page.locator(`#op-dtype-map td[data-op="${op}"][data-dtype="${dtype}"]`);
  assert.equal(await cell('argmax', 'float32').getAttribute('class'), 'fail');
  assert.equal(await cell('argmin', 'int64').getAttribute('class'), 'fail');
  assert.equal(await cell('amax', 'float32').getAttribute('class'), 'pass');
  assert.equal(await cell('argmax', 'complex64').getAttribute('class'), 'none');
  const argmaxVariants = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND op = 'argmax' AND dtype = 'float32'",
    runs.red.id)[0][0];
  assert.equal(Number(await cell('argmax', 'float32').innerText()), argmaxVariants);
  // Its link opens the list of those variants.
  await cell('argmax', 'float32').locator('a').click();
  const list = page.locator('#v-argmax-float32');
  assert.equal(await list.locator('li').count(), argmaxVariants);

  // The trend: two runs of the file, green then red, with the red bar's failures.
  const bars = page.locator('#files tr[data-file="test/test_reductions.py"] svg.trend title');
  assert.equal(await bars.count(), 2);
  assert.match(await bars.nth(0).textContent(), new RegExp(`^${runs.green.id}: \\d+ pass`));
  const redFails = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome IN ('failed', 'error')",
    runs.red.id)[0][0];
  assert.match(await bars.nth(1).textContent(), new RegExp(` ${redFails} fail$`));

  // Reproduction and manifest.
  assert.match(await page.locator('#reproduce').innerText(), /OOTCI_PLAN=.*-m pytest -p no:cacheprovider/s);
  assert.match(await page.locator('#manifest').innerText(), /"torch_version"/);

  assert.deepEqual(page.requests, [], 'the page requested nothing');
  await page.close();
});

test('the green run\'s report has no failures and its own numbers', async () => {
  const page = await open(runs.green.html, 'report-green');
  assert.equal(await page.locator('#verdict').innerText(), 'success');
  assert.equal(await count(page, 'failed'), 0);
  assert.equal(await page.locator('#failing').innerText(), 'None.');
  const passed = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome = 'passed'", runs.green.id)[0][0];
  assert.equal(await count(page, 'passed'), passed);
  assert.deepEqual(page.requests, []);
  await page.close();
});

test('a staged run lists wave 2 apart: why it ran, and what it found first', async () => {
  const page = await open(runs.raised.html, 'report-wave2');
  const why = page.locator('#wave2-why');
  assert.equal(await why.getAttribute('data-ran'), 'true');
  assert.match(await why.innerText(),
    new RegExp(`^Wave 2 \\(${runs.then.length} tests\\) ran because wave 1 raised: .*argmax.* (failed|errored) with NotImplementedError\\.$`));
  // Every wave-2 result, failures first, as the evidence store has them.
  const rows = page.locator('#wave2 tr[data-outcome]');
  assert.equal(await rows.count(), runs.then.length);
  const outcomes = await rows.evaluateAll((trs) => trs.map((tr) => tr.getAttribute('data-outcome')));
  const failed = (o) => o === 'failed' || o === 'error';
  const stored = sql(`SELECT outcome FROM results WHERE run_id = ? AND test_id IN (${runs.then.map(() => '?').join(',')})`,
    runs.raised.id, ...runs.then).map((r) => r[0]);
  assert.deepEqual([...outcomes].sort(), [...stored].sort());
  const firstPass = outcomes.findIndex((o) => !failed(o));
  assert.ok(outcomes.filter(failed).length > 0, 'the other argmax dtypes fail in wave 2');
  assert.ok(firstPass === -1 || outcomes.slice(firstPass).every((o) => !failed(o)), outcomes.join(' '));
  // The failing list says which wave found each test.
  const wave2Failing = await page.locator('#failing tr[data-wave="2"]').count();
  assert.equal(wave2Failing, outcomes.filter(failed).length);
  assert.ok(await page.locator('#failing tr[data-wave="1"]').count() > 0);
  assert.deepEqual(page.requests, []);
  await page.close();

  const quiet = await open(runs.quiet.html, 'report-wave2-quiet');
  assert.equal(await quiet.locator('#wave2-why').getAttribute('data-ran'), 'false');
  assert.match(await quiet.locator('#wave2-why').innerText(),
    /did not run: no first-stage test failed other than by a mismatch\.$/);
  assert.equal(await quiet.locator('#wave2').innerText(), 'No wave-2 results.');
  assert.equal(sql('SELECT COUNT(*) FROM results WHERE run_id = ?', runs.quiet.id)[0][0],
    sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND op = 'argmax' AND dtype = 'float32'", runs.green.id)[0][0]);
  await quiet.close();
});

test('a test message holding HTML and a script is shown as text (ootci report html)', async () => {
  const db = join(dir, 'hostile.db');
  execFileSync('/usr/bin/python3', ['-c', 'import shutil, sqlite3, sys\n' +
    'shutil.copy(sys.argv[1], sys.argv[2])\n' +
    'db = sqlite3.connect(sys.argv[2])\n' +
    'db.execute("UPDATE results SET message = ? WHERE run_id = ? AND outcome = \'failed\'", (sys.argv[3], sys.argv[4]))\n' +
    'db.commit()', join(dir, 'ws', 'evidence.db'), db,
    '<script>alert("x")</script><img src=x onerror=alert(2)> AssertionError', runs.red.id]);
  const out = join(dir, 'hostile');
  const written = execFileSync(ootci, ['report', 'html', '--run', runs.red.id, '--evidence', db, '--out', out],
    { encoding: 'utf8' }).trim();
  assert.equal(written, join(out, 'report.html'));
  const page = await open(written, 'report-hostile');
  const text = await page.locator('#errors').innerText();
  assert.ok(text.includes('<script>alert("x")</script><img src=x onerror=alert(2)> AssertionError'), text);
  assert.equal(await page.locator('#errors script, #errors img, #failing script, #failing img').count(), 0);
  assert.deepEqual(page.requests, [], 'no dialog, no request');
  await page.close();
});
