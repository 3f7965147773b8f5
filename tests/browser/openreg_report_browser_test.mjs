// Browser test of the run report on PyTorch's OpenReg (issue 36): what a new device's report
// shows. A real `ootci run` of upstream torch 2.6 tests on OpenReg in the Debian 13 bed
// (backend.root), every variant mandatory as discovery runs them: reductions of four ops over
// each dtype they have (passes, kernels OpenReg lacks, arguments its device pipe cannot carry) and four
// binary-ufunc variants whose device daemon tends to die (crashes). The page's op x dtype map and
// its failures by cause are checked against the evidence store, and the page is kept as
// build/report-screenshots/report-openreg.png. scripts/test sets OOTCI_OPENREG_DIR,
// OOTCI_BED_ROOT and OOTCI_BED_TORCH_ROOT (scripts/lib/openreg.sh, torch_bed.sh).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { runWithReport, sqlRows } from './run_helpers.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const build = process.env.OOTCI_BUILD_DIR || join(root, 'build');
const ootci = join(build, 'ootci');
const shots = join(build, 'report-screenshots');
const { OOTCI_OPENREG_DIR: openreg, OOTCI_BED_ROOT: bedRoot, OOTCI_BED_TORCH_ROOT: suite } = process.env;
const skip = !(openreg && bedRoot && suite) &&
  'OpenReg lives in the torch 2.6 bed: set OOTCI_OPENREG_DIR, OOTCI_BED_ROOT and OOTCI_BED_TORCH_ROOT';
let browser, dir, run;

const REDUCTIONS = 'test/test_reductions.py::TestReductionsOPENREG::test_ref_small_input_';
const DTYPES = ['bool', 'uint8', 'int8', 'int16', 'int32', 'int64', 'float16', 'float32', 'float64',
  'complex64', 'complex128'];
const BROADCASTING = 'test/test_binary_ufuncs.py::TestBinaryUfuncsOPENREG::test_broadcasting_';

function sql(query, ...args) {
  return sqlRows(join(dir, 'ws', 'evidence.db'), query, ...args);
}

before(async () => {
  if (skip) return;
  dir = mkdtempSync(join(tmpdir(), 'ootci-openreg-report-'));
  mkdirSync(shots, { recursive: true });
  writeFileSync(join(dir, 'suite.yaml'), 'test_suite_config:\n  files:\n' +
    '    - path: ${TORCH_ROOT}/test/test_reductions.py\n      unlisted_test_mode: mandatory_success\n' +
    '    - path: ${TORCH_ROOT}/test/test_binary_ufuncs.py\n      unlisted_test_mode: mandatory_success\n');
  // The device's name and how to load it: nothing else is OpenReg's (examples/openreg/ootci.yaml).
  writeFileSync(join(dir, 'ootci.yaml'), `backend:\n  name: openreg\n  device_type: openreg\n` +
    `  python: /usr/bin/python3\n  root: ${bedRoot}\n  modules: [pytorch_openreg]\n  pythonpath: [${openreg}]\n` +
    `upstream:\n  torch_root: ${suite}\ntest_configs: [${join(dir, 'suite.yaml')}]\n` +
    `workspace: ${dir}/ws\nrun:\n  reruns: 0\n  dead_helper_grace_s: 3\n`);
  const tests = [];
  for (const op of ['all', 'amax', 'sum', 'count_nonzero'])
    for (const dtype of DTYPES)
      if (op !== 'amax' || !dtype.startsWith('complex')) tests.push(`${REDUCTIONS}${op}_openreg_${dtype}`);
  tests.push(`${BROADCASTING}_refs_float_power_openreg_float32`, `${BROADCASTING}_refs_float_power_openreg_int64`,
    `${BROADCASTING}_refs_floor_divide_openreg_float32`, `${BROADCASTING}_refs_clamp_min_openreg_float32`);
  writeFileSync(join(dir, 'select.json'), JSON.stringify({ tests }));
  run = runWithReport(ootci, ['run', '--config', join(dir, 'ootci.yaml'), '--select', join(dir, 'select.json')],
    { ...process.env, TORCH_ROOT: suite });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu'],
  });
});

after(async () => {
  if (browser) await browser.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('OpenReg\'s report: the op x dtype map and the failures by cause, as the store has them', { skip }, async () => {
  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const requests = [];
  page.on('request', (r) => { if (r.url() !== `file://${run.html}`) requests.push(r.url()); });
  await page.goto(`file://${run.html}`);
  await page.screenshot({ path: join(shots, 'report-openreg.png'), fullPage: true });

  // Every selected variant ran on the device named openreg.
  const total = sql('SELECT COUNT(*) FROM results WHERE run_id = ?', run.id)[0][0];
  assert.equal(total, 4 * DTYPES.length - 2 + 4);  // amax has no complex variants
  assert.equal(Number(await page.locator('[data-count="total"]').innerText()), total);
  assert.match(await page.locator('#manifest').innerText(), /"device_type": "openreg"/);

  // The map: each cell's class and count are the store's, op by op and dtype by dtype.
  const cells = sql(`SELECT op, dtype, COUNT(*), SUM(outcome IN ('failed', 'error')), SUM(outcome = 'passed')
                     FROM results WHERE run_id = ? AND op != '' GROUP BY op, dtype`, run.id);
  assert.ok(cells.length >= 42, cells.length);
  for (const [op, dtype, n, failing, passed] of cells) {
    const cell = page.locator(`#op-dtype-map td[data-op="${op}"][data-dtype="${dtype}"]`);
    assert.equal(Number(await cell.innerText()), n, `${op} ${dtype}`);
    if (failing > 0) assert.equal(await cell.getAttribute('class'), 'fail', `${op} ${dtype}`);
    else if (passed === n) assert.equal(await cell.getAttribute('class'), 'pass', `${op} ${dtype}`);
  }
  // amax passes on every real dtype; complex sums need view_as_real, which OpenReg lacks.
  const cell = (op, dtype) => page.locator(`#op-dtype-map td[data-op="${op}"][data-dtype="${dtype}"]`);
  assert.equal(await cell('amax', 'float32').getAttribute('class'), 'pass');
  assert.equal(await cell('sum', 'complex64').getAttribute('class'), 'fail');

  // Failures by cause: the rows add up to the failing variants; OpenReg's missing view kernel
  // is a missing kernel, and each dead device daemon (SIG*, HelperDied) is a crash.
  const rows = Object.fromEntries(await page.locator('#causes tr[data-cause]').evaluateAll((trs) =>
    trs.map((tr) => [tr.getAttribute('data-cause'), Number(tr.children[1].textContent)])));
  const failing = sql("SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome IN ('failed', 'error')", run.id)[0][0];
  assert.equal(Object.values(rows).reduce((a, b) => a + b, 0), failing, JSON.stringify(rows));
  const notHandled = sql(`SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome IN ('failed', 'error')
                          AND message LIKE '%view op is not handled yet%'`, run.id)[0][0];
  assert.ok(notHandled >= 4, notHandled);  // complex variants (all, sum, count_nonzero)
  assert.ok(rows['missing kernel'] >= notHandled, JSON.stringify(rows));
  const crashed = sql(`SELECT COUNT(*) FROM results WHERE run_id = ? AND outcome = 'error'
                       AND (error_class LIKE 'SIG%' OR error_class = 'HelperDied')`, run.id)[0][0];
  assert.equal(rows.crash || 0, crashed, JSON.stringify(rows));

  assert.deepEqual(requests, [], 'the page requested nothing');
  await page.close();
});
