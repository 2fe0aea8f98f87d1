/**
 * spec/shapes.md stays true to the code: a section and a table row per shape, the system verbs
 * named in each row are exactly the registered system verbs of that shape, and the figures the
 * page states (retention, bands, rating sample, windows, limits) are the ones the code uses.
 *
 * Run: node --import tsx --test test/observe/shapes-doc.test.ts
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { VALID_SHAPES } from '../../src/spec/types.ts';
import { systemVerbs } from '../../src/verbs/index.ts';
import {
  EVENT_RETENTION_SECONDS,
  DEFAULT_POLL_INTERVAL_MS,
  MAX_WAIT_MS,
} from '../../src/runtime/observe/event-stream.ts';
import {
  MIN_RATING_SAMPLE,
  REPUTATION_WINDOWS,
  STAR_FORMULA_VERSION,
  starRating,
} from '../../src/runtime/observe/reputation.ts';
import {
  HIGH_CONFIDENCE,
  LEARNING_BELOW,
  MEDIUM_CONFIDENCE,
  SESSION_GAP_MS,
  SUGGEST_MODEL_VERSION,
} from '../../src/runtime/observe/transition-model.ts';
import { MACRO_RUN_TTL_SECONDS, MAX_MACRO_STEPS } from '../../src/verbs/macro-chain.ts';
import { TELEMETRY_MAX_WINDOW_SECONDS } from '../../src/runtime/observe/telemetry.ts';
import { SEMCONV_VERSION } from '../../src/runtime/observe/dispatch-spans.ts';

const page = readFileSync(fileURLToPath(new URL('../../spec/shapes.md', import.meta.url)), 'utf8');

describe('spec/shapes.md', () => {
  it('has a section and one overview row per shape', () => {
    for (const shape of VALID_SHAPES) {
      assert.match(page, new RegExp(`^## §${shape}$`, 'm'), `section §${shape}`);
      assert.equal(
        page.split('\n').filter((l) => l.startsWith(`| ${shape} |`)).length,
        1,
        `row for ${shape}`,
      );
    }
  });

  it('names exactly the registered system verbs of each shape in its row', () => {
    for (const shape of VALID_SHAPES) {
      const row = page.split('\n').find((l) => l.startsWith(`| ${shape} |`))!;
      const cell = row.split('|').slice(-2, -1)[0]!;
      const named = [...cell.matchAll(/`([a-z_.]+)`/g)].map((m) => m[1]).sort();
      const registered = systemVerbs
        .filter((v) => v.shape === shape)
        .map((v) => v.name)
        .sort();
      assert.deepEqual(named, registered, `system verbs of ${shape}`);
    }
  });

  it('states the figures the code uses', () => {
    assert.equal(EVENT_RETENTION_SECONDS, 30 * 86400);
    assert.match(page, /\*\*Retention: 30 days\.\*\*/);
    assert.match(page, new RegExp(`\`poll_interval_ms\` is ${DEFAULT_POLL_INTERVAL_MS} when`));
    assert.match(page, new RegExp(`wait_ms\\? \\(0–${MAX_WAIT_MS}\\)`));
    assert.match(page, new RegExp(`below\\s+\\*\\*${LEARNING_BELOW}\\*\\* observations`));
    assert.match(
      page,
      new RegExp(
        `\`high\` from \\*\\*${HIGH_CONFIDENCE}\\*\\*, \`medium\` from\\s+\\*\\*${MEDIUM_CONFIDENCE}\\*\\*`,
      ),
    );
    assert.match(page, new RegExp(`at most \\*\\*${SESSION_GAP_MS / 60_000} minutes\\*\\*`));
    assert.match(page, new RegExp(`model \`${SUGGEST_MODEL_VERSION}\``));
    assert.match(page, new RegExp(`null while fewer than \\*\\*${MIN_RATING_SAMPLE}\\*\\* calls`));
    assert.match(page, new RegExp(`formula \`${STAR_FORMULA_VERSION}\``));
    assert.match(page, new RegExp(`window\\? \\(${REPUTATION_WINDOWS.join(' \\| ')}, default 24h\\)`));
    assert.match(page, new RegExp(`\\(1–${MAX_MACRO_STEPS} steps\\)`));
    assert.match(page, new RegExp(`expires with\\s+the run after ${MACRO_RUN_TTL_SECONDS / 3600} hours`));
    assert.match(page, new RegExp(`10 to ${TELEMETRY_MAX_WINDOW_SECONDS} \\(default 300\\)`));
    assert.match(page, new RegExp(`semconv ${SEMCONV_VERSION.replace(/\.0$/, '').replace('.', '\\.')}`));
  });

  it('gives star ratings that match the worked examples', () => {
    assert.match(
      page,
      /always succeeds at its usual speed → 5\.0; 80 % success → 3\.2; 100 % but twice as slow\s+as usual → 4\.4/,
    );
    assert.equal(starRating(10, 0, 1, 1), 5);
    assert.equal(starRating(8, 2, 1, 1), 3.2);
    assert.equal(starRating(10, 0, 2, 1), 4.4);
    assert.equal(starRating(5, 4, 1, 1), null);
  });
});
