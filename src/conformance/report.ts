/**
 * Reports of a run: the human one (a table per section, evidence under each failure, the summary
 * line `N passed, N failed, N skipped`), JSON (the ConformanceReport itself) and JUnit XML (one
 * testsuite per section, one testcase per check; failures carry the requirement and evidence,
 * skips their reason). Spec: spec/conformance.md §reports.
 */
import type { ConformanceNotRun } from './outcome.ts';
import type { CheckResult, ConformanceReport, Evidence, Summary } from './types.ts';

/**
 * One line of text safe to print on a terminal: control characters (C0, DEL, C1 — escape
 * sequences, carriage returns, new lines a server put in its answer) shown as `\u001b`-style
 * escapes, so an answer can neither drive the terminal nor fake a line of the report.
 */
export function printable(text: string): string {
  return text.replace(
    // eslint-disable-next-line no-control-regex
    /[\u0000-\u001f\u007f-\u009f]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/** `N passed, N failed, N skipped`. */
export function summaryLine(s: Summary): string {
  return `${s.passed} passed, ${s.failed} failed, ${s.skipped} skipped`;
}

const LABEL = { pass: 'PASS', fail: 'FAIL', skip: 'SKIP' } as const;

function evidenceLines(e: Evidence, indent: string): string[] {
  const out = [`${indent}request: ${printable(e.request)}`];
  if (e.status !== undefined) out.push(`${indent}status:  ${e.status}`);
  if (e.answer !== undefined) {
    const text = typeof e.answer === 'string' ? e.answer : JSON.stringify(e.answer);
    out.push(`${indent}answer:  ${printable(text.length > 600 ? `${text.slice(0, 600)}…` : text)}`);
  }
  if (e.note !== undefined) out.push(`${indent}note:    ${printable(e.note)}`);
  return out;
}

/** Options of the human-readable conformance report. */
export interface HumanOptions {
  /** Evidence under every check, not only failures. */
  verbose?: boolean;
  /** ANSI colours. */
  color?: boolean;
}

/** The human report (see the header). */
export function formatHuman(report: ConformanceReport, options: HumanOptions = {}): string {
  const paint = (status: CheckResult['status'], text: string) =>
    !options.color ? text : `\u001b[${status === 'pass' ? 32 : status === 'fail' ? 31 : 33}m${text}\u001b[0m`;
  const o = report.options;
  const lines = [
    `solid conformance ${printable(report.target)}  (run ${report.run_id}; key: ${o.key ? 'yes' : 'no'}; writes: ${o.allow_writes ? 'allowed' : 'no'}; mcp: ${o.mcp ?? 'no'}; ucp: ${o.ucp ? 'yes' : 'no'})`,
  ];
  const idWidth = Math.max(...report.results.map((r) => r.id.length), 10);
  for (const section of report.sections) {
    const rows = report.results.filter((r) => r.section === section.id);
    lines.push('', `${section.id} — ${section.title}`);
    for (const r of rows) {
      lines.push(`  ${paint(r.status, LABEL[r.status])}  ${r.id.padEnd(idWidth)}  ${printable(r.message)}`);
      if (r.status === 'fail' || options.verbose) {
        lines.push(`        requirement: ${r.requirement} (${r.spec})`);
        for (const e of r.evidence) lines.push(...evidenceLines(e, '        '));
      }
    }
    lines.push(`  ${summaryLine(section.summary)}`);
  }
  lines.push('', summaryLine(report.summary));
  return lines.join('\n');
}

/** The JSON report (2-space indented). */
export function formatJson(report: ConformanceReport): string {
  return JSON.stringify(report, null, 2);
}

/** The JSON answer of a run that could not start: `{ kit, target, error: { reason, message, hint } }`. */
export function formatJsonNotRun(err: ConformanceNotRun): string {
  return JSON.stringify(
    {
      kit: { name: 'solid-verbs conformance' },
      target: err.target,
      error: { reason: err.reason, message: err.message, hint: err.hint },
    },
    null,
    2,
  );
}

/** JUnit XML of a run that could not start: one suite `run` with one errored testcase `run.preflight`. */
export function formatJunitNotRun(err: ConformanceNotRun): string {
  const message = xmlEscape(err.message);
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<testsuites name="solid-verbs conformance" tests="1" failures="0" skipped="0" errors="1" time="0.000">',
    `  <testsuite name="run" tests="1" failures="0" skipped="0" errors="1" time="0.000">`,
    '    <testcase classname="conformance.run" name="run.preflight" time="0.000">',
    `      <error message="${message}" type="${xmlEscape(err.reason)}">${message}\n${xmlEscape(err.hint)}</error>`,
    '    </testcase>',
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

/** Text safe inside XML: the five entities escaped, characters XML 1.0 forbids dropped. */
export function xmlEscape(text: string): string {
  return text
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function seconds(ms: number): string {
  return (ms / 1000).toFixed(3);
}

/** The JUnit XML report (see the header). */
export function formatJunit(report: ConformanceReport): string {
  const s = report.summary;
  const out = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="solid-verbs conformance" tests="${report.results.length}" failures="${s.failed}" skipped="${s.skipped}" errors="0" time="${seconds(report.duration_ms)}">`,
  ];
  for (const section of report.sections) {
    const rows = report.results.filter((r) => r.section === section.id);
    const time = rows.reduce((t, r) => t + r.duration_ms, 0);
    out.push(
      `  <testsuite name="${xmlEscape(section.id)}" tests="${rows.length}" failures="${section.summary.failed}" skipped="${section.summary.skipped}" errors="0" time="${seconds(time)}" timestamp="${xmlEscape(report.started_at.replace(/\.\d+Z$/, ''))}" hostname="${xmlEscape(new URL(report.target).host)}">`,
    );
    for (const r of rows) {
      const open = `    <testcase classname="conformance.${xmlEscape(r.section)}" name="${xmlEscape(r.id)}" time="${seconds(r.duration_ms)}">`;
      if (r.status === 'pass') {
        out.push(open, `      <system-out>${xmlEscape(r.message)}</system-out>`, '    </testcase>');
      } else if (r.status === 'skip') {
        out.push(open, `      <skipped message="${xmlEscape(r.message)}"/>`, '    </testcase>');
      } else {
        const body = [
          `${r.requirement} (${r.spec})`,
          ...r.evidence.flatMap((e) => evidenceLines(e, '')),
        ].join('\n');
        out.push(
          open,
          `      <failure message="${xmlEscape(r.message)}" type="${xmlEscape(r.id)}">${xmlEscape(body)}</failure>`,
          '    </testcase>',
        );
      }
    }
    out.push('  </testsuite>');
  }
  out.push('</testsuites>', '');
  return out.join('\n');
}
