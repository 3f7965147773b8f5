// What the report browser tests share: an `ootci run` whose report they open, and the evidence
// store read with Python's sqlite3 (no SQLite module for node here).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';

// `ootci ARGS` (a run): exits 0, or 1 for failing tests; returns its report.html and run id.
export function runWithReport(ootci, args, env = process.env) {
  let out;
  try {
    out = execFileSync(ootci, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env });
  } catch (e) {
    assert.equal(e.status, 1, `ootci run failed: ${e.stdout}\n${e.stderr}`);  // 1: failing tests
    out = e.stdout;
  }
  const m = /^report: (.*)$/m.exec(out);
  assert.ok(m, `no report line in:\n${out}`);
  return { html: m[1], id: /runs\/([^/]+)\/report\.html$/.exec(m[1])[1] };
}

// The rows of QUERY (with ? parameters ARGS) in the SQLite database DB.
export function sqlRows(db, query, ...args) {
  const py = 'import json, sqlite3, sys\n' +
    'db = sqlite3.connect(sys.argv[1])\n' +
    'print(json.dumps(db.execute(sys.argv[2], sys.argv[3:]).fetchall()))';
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', py, db, query, ...args], { encoding: 'utf8' }));
}
