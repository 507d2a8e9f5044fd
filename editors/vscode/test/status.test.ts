import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { IDLE_TEXT, LOADING_TEXT, MISSING_TEXT, STARTING_TEXT, STOPPED_TEXT, StatusModel } from '../src/status';

test('status text follows server state and work-done progress', () => {
  const s = new StatusModel();
  assert.equal(s.text(), STARTING_TEXT);
  s.setServerState('running');
  assert.equal(s.text(), 'racelens');
  assert.equal(IDLE_TEXT, 'racelens');

  assert.equal(s.onProgress(1, { kind: 'begin', title: 'racelens: loading workspace', percentage: 0 }), true);
  assert.equal(s.text(), 'racelens: loading…');
  assert.equal(LOADING_TEXT, 'racelens: loading…');
  s.onProgress(1, { kind: 'report', message: '3/10 files', percentage: 30 });
  assert.equal(s.tooltip(), 'racelens: loading workspace — 3/10 files (30%)');

  // A second, overlapping progress keeps the status busy until both end.
  s.onProgress('other', { kind: 'begin', title: 'racelens: analysing' });
  s.onProgress(1, { kind: 'end' });
  assert.equal(s.text(), LOADING_TEXT);
  s.onProgress('other', { kind: 'end' });
  assert.equal(s.text(), IDLE_TEXT);
  assert.equal(s.busy, false);
});

test('report and end for unknown tokens are ignored', () => {
  const s = new StatusModel();
  s.setServerState('running');
  assert.equal(s.onProgress(7, { kind: 'report', percentage: 50 }), false);
  assert.equal(s.onProgress(7, { kind: 'end' }), false);
  assert.equal(s.text(), IDLE_TEXT);
});

test('stopping the server clears pending progress', () => {
  const s = new StatusModel();
  s.setServerState('running');
  s.onProgress(1, { kind: 'begin', title: 'racelens: loading workspace' });
  s.setServerState('stopped');
  assert.equal(s.text(), STOPPED_TEXT);
  s.setServerState('running');
  assert.equal(s.text(), IDLE_TEXT);
  s.setServerState('missing');
  assert.equal(s.text(), MISSING_TEXT);
});
