// The `racelens.explain` server command: its arguments and how its answer is
// shown to the user.
//
// This module must not import `vscode`: it is unit-tested with plain node.

import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

export const EXPLAIN_COMMAND = 'racelens.explain';

export interface LspPosition {
  line: number;
  character: number;
}

export interface LspRange {
  start: LspPosition;
  end: LspPosition;
}

export interface ExplainStep {
  message: string;
  uri: string;
  range: LspRange;
}

export interface ExplainResult {
  race: string;
  steps: ExplainStep[];
  text: string;
}

export interface ExecuteCommandParams {
  command: string;
  arguments: unknown[];
}

/** Parameters of the `workspace/executeCommand` request for the cursor position. */
export function explainRequest(uri: string, position: LspPosition): ExecuteCommandParams {
  return {
    command: EXPLAIN_COMMAND,
    arguments: [{ uri, position: { line: position.line, character: position.character } }],
  };
}

function isPosition(x: unknown): x is LspPosition {
  const p = x as LspPosition;
  return p !== null && typeof p === 'object' && typeof p.line === 'number' && typeof p.character === 'number';
}

/** Validates the server's answer; `null` (no race at the position) is not a result. */
export function isExplainResult(x: unknown): x is ExplainResult {
  if (x === null || typeof x !== 'object') {
    return false;
  }
  const r = x as Record<string, unknown>;
  if (typeof r['race'] !== 'string' || typeof r['text'] !== 'string' || !Array.isArray(r['steps'])) {
    return false;
  }
  return (r['steps'] as unknown[]).every((s) => {
    const step = s as Record<string, unknown>;
    const range = step?.['range'] as Record<string, unknown> | undefined;
    return (
      step !== null &&
      typeof step === 'object' &&
      typeof step['message'] === 'string' &&
      typeof step['uri'] === 'string' &&
      range !== undefined &&
      range !== null &&
      isPosition(range['start']) &&
      isPosition(range['end'])
    );
  });
}

/**
 * A file URI as a path for display, relative to `relativeTo` when the file
 * lies inside it. Non-file URIs are returned unchanged.
 */
export function displayPath(uri: string, relativeTo?: string): string {
  if (!uri.startsWith('file:')) {
    return uri;
  }
  let file: string;
  try {
    file = fileURLToPath(uri);
  } catch {
    return uri;
  }
  if (relativeTo !== undefined && relativeTo !== '') {
    const rel = path.relative(relativeTo, file);
    if (rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel)) {
      return rel;
    }
  }
  return file;
}

/** `file:line:col` with 1-based line and column, the form VS Code's output view links. */
export function formatLocation(uri: string, pos: LspPosition, relativeTo?: string): string {
  return `${displayPath(uri, relativeTo)}:${pos.line + 1}:${pos.character + 1}`;
}

/**
 * The explanation as plain text: a header naming the race, the server's
 * schedule text, then the numbered steps with their locations.
 */
export function formatExplain(result: ExplainResult, relativeTo?: string): string {
  const lines: string[] = [];
  lines.push(`racelens: ${result.race}`);
  lines.push('='.repeat(Math.min(80, lines[0].length)));
  const text = result.text.replace(/\r\n/g, '\n').replace(/\s+$/, '');
  if (text !== '') {
    lines.push('');
    lines.push(text);
  }
  if (result.steps.length > 0) {
    lines.push('');
    lines.push('Steps:');
    const width = String(result.steps.length).length;
    result.steps.forEach((step, i) => {
      const n = String(i + 1).padStart(width, ' ');
      lines.push(`  ${n}. ${formatLocation(step.uri, step.range.start, relativeTo)}  ${step.message}`);
    });
  }
  return lines.join('\n') + '\n';
}

/** What to tell the user when the answer is not a race explanation. */
export function noRaceMessage(result: unknown): string {
  if (result === null || result === undefined) {
    return 'racelens: no data race at the cursor.';
  }
  return 'racelens: the server sent an explanation this extension does not understand.';
}
