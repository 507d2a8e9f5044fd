import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { pathToFileURL } from 'node:url';
import {
  EXPLAIN_COMMAND,
  displayPath,
  explainRequest,
  formatExplain,
  isExplainResult,
  noRaceMessage,
  type ExplainResult,
} from '../src/explain';

const uri = pathToFileURL('/proj/src/race.c').toString();

const sample: ExplainResult = {
  race: 'data race on `counter`',
  text: 'thread main: counter++ (no lock)\r\nthread worker: counter++ holding m\n\n',
  steps: [
    {
      message: 'write in thread `worker` holding `m`',
      uri,
      range: { start: { line: 9, character: 4 }, end: { line: 9, character: 13 } },
    },
    {
      message: 'write in thread `main` holding no lock',
      uri: pathToFileURL('/elsewhere/other file.c').toString(),
      range: { start: { line: 19, character: 0 }, end: { line: 19, character: 9 } },
    },
  ],
};

test('explainRequest builds the executeCommand parameters of the contract', () => {
  assert.deepEqual(explainRequest('file:///a.c', { line: 3, character: 7 }), {
    command: 'racelens.explain',
    arguments: [{ uri: 'file:///a.c', position: { line: 3, character: 7 } }],
  });
  assert.equal(EXPLAIN_COMMAND, 'racelens.explain');
});

test('isExplainResult accepts the contract shape and rejects others', () => {
  assert.equal(isExplainResult(sample), true);
  assert.equal(isExplainResult({ race: 'x', text: '', steps: [] }), true);
  assert.equal(isExplainResult(null), false);
  assert.equal(isExplainResult({ race: 'x', steps: [] }), false);
  assert.equal(isExplainResult({ race: 'x', text: '', steps: [{ message: 'm', uri }] }), false);
});

test('displayPath makes workspace files relative and decodes URIs', () => {
  assert.equal(displayPath(uri, '/proj'), 'src/race.c');
  assert.equal(displayPath(pathToFileURL('/elsewhere/other file.c').toString(), '/proj'), '/elsewhere/other file.c');
  assert.equal(displayPath('untitled:Untitled-1', '/proj'), 'untitled:Untitled-1');
});

test('formatExplain prints header, schedule text and 1-based step locations', () => {
  const out = formatExplain(sample, '/proj');
  assert.equal(
    out,
    [
      'racelens: data race on `counter`',
      '================================',
      '',
      'thread main: counter++ (no lock)',
      'thread worker: counter++ holding m',
      '',
      'Steps:',
      '  1. src/race.c:10:5  write in thread `worker` holding `m`',
      '  2. /elsewhere/other file.c:20:1  write in thread `main` holding no lock',
      '',
    ].join('\n'),
  );
});

test('formatExplain without steps or text prints only the header', () => {
  assert.equal(formatExplain({ race: 'r', text: '  \n', steps: [] }), 'racelens: r\n===========\n');
});

test('noRaceMessage distinguishes null from a malformed answer', () => {
  assert.match(noRaceMessage(null), /no data race at the cursor/);
  assert.match(noRaceMessage({ foo: 1 }), /does not understand/);
});
