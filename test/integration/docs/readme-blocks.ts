import { readFileSync } from 'node:fs';

/** README.md as the repository has it. */
export const README_PATH = new URL('../../../README.md', import.meta.url);

export function readReadme(): string {
  return readFileSync(README_PATH, 'utf8');
}

/** A fenced code block of a Markdown text. */
export interface FencedBlock {
  /** The fence's info string: ```sh walkthrough=send → `sh walkthrough=send`. */
  readonly info: string;
  readonly body: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
}

/** Every ``` block that starts at the beginning of a line, in order. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  let open: { info: string; line: number; lines: string[] } | null = null;
  const lines = markdown.split('\n');
  for (const [index, text] of lines.entries()) {
    if (open === null) {
      const fence = /^```(.*)$/.exec(text);
      if (fence) open = { info: (fence[1] ?? '').trim(), line: index + 1, lines: [] };
    } else if (/^```\s*$/.test(text)) {
      blocks.push({ info: open.info, body: `${open.lines.join('\n')}\n`, line: open.line });
      open = null;
    } else {
      open.lines.push(text);
    }
  }
  if (open !== null) throw new Error(`README: the code block opened at line ${String(open.line)} is never closed`);
  return blocks;
}

/**
 * The blocks whose info string carries `<marker>=<name>` (```sh walkthrough=send), by name, in README order.
 * A name used twice is an error: every step must be found exactly once.
 */
export function markedBlocks(markdown: string, marker: string): { readonly name: string; readonly block: FencedBlock }[] {
  const found: { name: string; block: FencedBlock }[] = [];
  for (const block of fencedBlocks(markdown)) {
    const words = block.info.split(/\s+/);
    const mark = words.find((word) => word.startsWith(`${marker}=`));
    if (mark === undefined) continue;
    const name = mark.slice(marker.length + 1);
    if (found.some((step) => step.name === name))
      throw new Error(`README: two blocks are marked ${marker}=${name} (line ${String(block.line)})`);
    found.push({ name, block });
  }
  return found;
}

/**
 * Every JSON object printed in `text`, in order, however the lines of several writers interleave: a brace-matching
 * scan (aware of strings) finds each top-level `{…}` and keeps those that parse.
 */
export function jsonObjects(text: string): Record<string, unknown>[] {
  const objects: Record<string, unknown>[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  let escaped = false;
  for (let i = 0; i < text.length; i++) {
    const char = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
      continue;
    }
    if (char === '"' && depth > 0) inString = true;
    else if (char === '{') {
      if (depth === 0) start = i;
      depth++;
    } else if (char === '}' && depth > 0) {
      depth--;
      if (depth === 0) {
        try {
          const parsed: unknown = JSON.parse(text.slice(start, i + 1));
          if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) objects.push(parsed as Record<string, unknown>);
        } catch {
          // not JSON after all (a brace in plain text): skip it
        }
      }
    }
  }
  return objects;
}
