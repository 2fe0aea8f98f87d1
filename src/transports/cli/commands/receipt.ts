/**
 * `solid receipt verify <file> [--keys jwks.json] [--json]`: verify a saved receipt (or a whole
 * envelope holding one) offline: its ES256 attestation with the tenant's public key — from
 * `--keys` (exported earlier with `solid audit export-keys`) or else from the local database —
 * and, when the local database is there, that the audit log still holds the attested row at its
 * seq with the same hash (the log was not rewritten or truncated below the receipt).
 * The log is judged only by a receipt whose signature verifies: a malformed attestation is one
 * line saying so, and an edited seq or hash is "signature invalid" (the receipt was altered or
 * signed by another key) with the log "not checked" — never "the log was rewritten".
 * Exit 0 when valid, 1 when not (2 for an unreadable file).
 *
 * Spec: spec/receipts.md §attestation.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { Io } from '../output.ts';
import { openAuditSource } from './audit.ts';
import { verifyReceipt } from '../../../runtime/ledger/keys/receipts.ts';
import { consentInWords } from '../../../runtime/consent/provenance.ts';
import { databaseKeys, parseTrustFile } from '../../../runtime/ledger/verify/verify.ts';
import { checkReceiptInLog, type ReceiptLogCheck } from '../../../runtime/ledger/verify/receipt-check.ts';
import type { PublicJwk } from '../../../runtime/ledger/keys/tenant-keys.ts';
import { attestedRow, receiptIn } from '../../../runtime/ledger/verify/receipt-doc.ts';
import { VerbError } from '../../../runtime/errors.ts';

export function registerReceipt(program: Command, io: Io, setExit: (code: number) => void): void {
  const receipt = program.command('receipt').description('Signed receipts');
  receipt
    .command('verify <file>')
    .description(
      'Verify a saved receipt (or envelope) offline: signature, and its row in the local audit log',
    )
    .option(
      '--keys <jwks.json>',
      'trusted public keys exported with `solid audit export-keys` (default: the local database)',
    )
    .option('--json', 'print the verdict as JSON')
    .action(async (file: string, opts: { keys?: string; json?: boolean }) => {
      let doc: unknown;
      try {
        doc = JSON.parse(readFileSync(file, 'utf8'));
      } catch (err) {
        throw new VerbError(
          'invalid_args',
          `Cannot read a JSON receipt from ${file}: ${(err as Error).message}`,
          { hint: 'Save the envelope with `solid agent dispatch … --json > receipt.json`.' },
        );
      }
      const r = receiptIn(doc);
      if (r === undefined)
        throw new VerbError('invalid_args', `${file} holds no signed receipt (no attestation).`, {
          hint: 'Only write receipts carry an attestation; pass the envelope or its result.',
        });
      const db = await openAuditSource(program.opts<{ db?: string }>().db, false);
      try {
        let keys: PublicJwk[];
        let keySource: string;
        if (opts.keys !== undefined) {
          keys = parseTrustFile(readFileSync(opts.keys, 'utf8')).keys;
          keySource = opts.keys;
        } else if (db !== undefined) {
          keys = await databaseKeys(db.q);
          keySource = `${db.path} (the same store: pass --keys for an independent check)`;
        } else {
          throw new VerbError(
            'invalid_args',
            'No public keys: pass --keys (from `solid audit export-keys`) or a local database (--db).',
            { hint: 'solid audit export-keys --out keys.json' },
          );
        }
        const signature = verifyReceipt(r, keys);
        const malformed = signature.errors.find((e) => e.startsWith('attestation is malformed'));
        // Only a signed seq and hashes say anything about the log (an edited receipt is its own fault).
        const row = attestedRow(r.attestation, signature.valid);
        const log: ReceiptLogCheck | undefined =
          db !== undefined && row !== undefined ? await checkReceiptInLog(db.q, row) : undefined;
        const logOk =
          log === undefined ||
          log.status === 'present' ||
          (log.status === 'unknown_tenant' && opts.keys !== undefined);
        const valid = signature.valid && logOk;
        const verdict = {
          valid,
          signature: {
            valid: signature.valid,
            kid: signature.kid ?? null,
            errors: signature.errors,
            keys: keySource,
          },
          log: log ?? null,
          audit_id: r.audit_id,
          seq: attestedRow(r.attestation)?.seq ?? null,
          // Who consented, signed with the receipt (spec/receipts.md §consent); receipts older than it have none.
          consent: consentInWords(r.consent),
        };
        if (opts.json) {
          io.out(JSON.stringify(verdict, null, 2));
        } else if (malformed !== undefined) {
          // Nothing in it can be checked: one line, no claim about the log.
          io.err(`✗ receipt not valid: ${malformed}`);
        } else {
          const lines = [
            signature.valid
              ? `✓ signature valid (key ${signature.kid}, from ${keySource})`
              : `✗ signature invalid: ${signature.errors.join('; ')}`,
            log !== undefined
              ? `${log.status === 'present' ? '✓' : logOk ? '·' : '✗'} audit log: ${log.message}`
              : !signature.valid
                ? '· audit log: not checked (an unverified receipt proves nothing about the log; its seq and hashes may be the edited part)'
                : '· audit log: not checked (no local database)',
            ...(verdict.consent !== null
              ? [
                  `${signature.valid ? '✓' : '·'} consent: ${verdict.consent.words}${signature.valid ? '' : ' (unverified)'}`,
                ]
              : []),
          ];
          (valid ? io.out : io.err)(lines.join('\n'));
        }
        setExit(valid ? 0 : 1);
      } finally {
        await db?.close();
      }
    });
}
