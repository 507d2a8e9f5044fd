import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { CPP_GLOB, documentSelector, isCWorkspace, isServedDocument } from '../src/selector';

test('a C workspace has .c files and no C++ sources', () => {
  assert.equal(isCWorkspace(true, false), true);
  assert.equal(isCWorkspace(true, true), false);
  assert.equal(isCWorkspace(false, false), false);
  assert.ok(CPP_GLOB.includes('cpp') && CPP_GLOB.includes('hpp') && !CPP_GLOB.includes(',h,'));
});

test('.h files typed cpp are served in C workspaces only', () => {
  assert.deepEqual(documentSelector(false), [{ scheme: 'file', language: 'c' }]);
  assert.deepEqual(documentSelector(true), [
    { scheme: 'file', language: 'c' },
    { scheme: 'file', language: 'cpp', pattern: '**/*.h' },
  ]);
  assert.equal(isServedDocument('c', '/p/a.c', false), true);
  assert.equal(isServedDocument('cpp', '/p/a.h', true), true);
  assert.equal(isServedDocument('cpp', '/p/a.h', false), false);
  assert.equal(isServedDocument('cpp', '/p/a.cpp', true), false);
});
