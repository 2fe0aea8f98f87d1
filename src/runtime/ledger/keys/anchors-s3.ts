/**
 * The S3-compatible anchor sink (issue 30 row 11; spec/audit.md §anchors; docs/operations.md
 * §anchors): each publication of the anchor document is a new object
 * `<prefix>anchor-<published_at>-<random>.json` in a bucket — AWS S3 or any S3-compatible store
 * (MinIO, Ceph, R2, …) — through the AWS SDK's S3 client (`@aws-sdk/client-s3`, an optional
 * dependency loaded only when an `s3://` location is used). The runtime only ever PUTs new keys; it
 * never overwrites or deletes one. That the bucket is out of the database owner's reach (another
 * account, write-only credentials, versioning and Object Lock in compliance mode) is the
 * operator's part.
 *
 * Locations are `s3://<bucket>/<prefix>`. Settings beyond the location come from the environment:
 * `SOLID_ANCHOR_S3_ENDPOINT` (an S3-compatible server's URL; path-style addressing then), the
 * region from `SOLID_ANCHOR_S3_REGION`, `AWS_REGION` (default `us-east-1`), and the credentials
 * from the SDK's default chain (`AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`, a profile, an
 * instance or task role). No credential is ever logged: a sink's name is `s3://bucket/prefix`.
 */
import { randomBytes } from 'node:crypto';
import { VerbError } from '../../errors.ts';
import type { AnchorDocument, AnchorSink } from './anchors.ts';

/** A parsed `s3://bucket/prefix` location. */
export interface S3Location {
  bucket: string;
  /** The key prefix, '' or ending in '/'. */
  prefix: string;
}

/** How to reach the bucket (from the environment: {@link s3SettingsFromEnv}). */
export interface S3Settings {
  /** An S3-compatible endpoint URL; undefined for AWS S3 itself. */
  endpoint?: string;
  region: string;
  /** Per-request bound, ms (default 10 000). */
  timeoutMs?: number;
}

const HINT = 'e.g. s3://acme-anchors/solid/ (SOLID_ANCHOR_S3_ENDPOINT for an S3-compatible server)';

/** Whether `location` names an S3 bucket (`s3://…`). */
export function isS3Location(location: string): boolean {
  return /^s3:\/\//i.test(location);
}

/**
 * Parse `s3://<bucket>/<prefix>`. Throws invalid_args for anything else (an empty bucket, a bucket
 * name S3 refuses).
 */
export function parseS3Location(location: string): S3Location {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/i.exec(location);
  const bucket = m?.[1] ?? '';
  if (m === null || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(bucket))
    throw new VerbError(
      'invalid_args',
      `An S3 anchor location must be s3://<bucket>/<prefix>, got ${JSON.stringify(location.slice(0, 80))}.`,
      { hint: HINT },
    );
  let prefix = m[2] ?? '';
  if (prefix !== '' && !prefix.endsWith('/')) prefix += '/';
  return { bucket, prefix };
}

/** The S3 settings of the environment (see the module header). Throws invalid_args on a bad endpoint. */
export function s3SettingsFromEnv(env: NodeJS.ProcessEnv): S3Settings {
  const endpoint = env.SOLID_ANCHOR_S3_ENDPOINT || undefined;
  if (endpoint !== undefined && !(URL.canParse(endpoint) && /^https?:$/.test(new URL(endpoint).protocol)))
    throw new VerbError(
      'invalid_args',
      `SOLID_ANCHOR_S3_ENDPOINT must be an http(s) URL, got ${JSON.stringify(endpoint.slice(0, 80))}.`,
      { hint: 'e.g. SOLID_ANCHOR_S3_ENDPOINT=https://minio.internal:9000' },
    );
  return {
    ...(endpoint !== undefined ? { endpoint } : {}),
    region: env.SOLID_ANCHOR_S3_REGION || env.AWS_REGION || env.AWS_DEFAULT_REGION || 'us-east-1',
  };
}

type S3Module = typeof import('@aws-sdk/client-s3');

/**
 * Throw invalid_args when `@aws-sdk/client-s3` is not installed (it is an optional dependency:
 * `npm install --omit=optional` leaves it out). Checked when a sink or a reader is configured, so
 * that `solid serve` refuses to start rather than fail every publication.
 */
export function assertS3ClientInstalled(): void {
  try {
    import.meta.resolve('@aws-sdk/client-s3');
  } catch {
    throw new VerbError(
      'invalid_args',
      'S3 anchors need the package @aws-sdk/client-s3, which is not installed.',
      {
        hint: 'npm install @aws-sdk/client-s3 (an optional dependency of solid-verbs), or use --anchor-dir / --anchor-url.',
      },
    );
  }
}

async function client(
  settings: S3Settings,
): Promise<{ s3: S3Module; client: InstanceType<S3Module['S3Client']> }> {
  assertS3ClientInstalled();
  const s3 = await import('@aws-sdk/client-s3');
  const c = new s3.S3Client({
    region: settings.region,
    ...(settings.endpoint !== undefined ? { endpoint: settings.endpoint, forcePathStyle: true } : {}),
    // Checksums only where S3 requires them: several S3-compatible stores refuse the newer defaults.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    maxAttempts: 2,
  });
  return { s3, client: c };
}

/**
 * An S3 sink for `s3://bucket/prefix`: each publication PUTs a new object (JSON, never an existing
 * key), bounded by `settings.timeoutMs`. Rejects when the bucket refuses or does not answer (the
 * publisher logs it and retries on its next turn).
 */
export function s3Sink(location: string, settings: S3Settings): AnchorSink {
  const { bucket, prefix } = parseS3Location(location);
  assertS3ClientInstalled();
  let made: ReturnType<typeof client> | undefined;
  return {
    name: `s3://${bucket}/${prefix}`,
    async publish(doc: AnchorDocument) {
      made ??= client(settings);
      const { s3, client: c } = await made;
      const stamp = doc.published_at.replace(/[:.]/g, '-');
      const key = `${prefix}anchor-${stamp}-${randomBytes(3).toString('hex')}.json`;
      await c.send(
        new s3.PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: JSON.stringify(doc, null, 2) + '\n',
          ContentType: 'application/json',
        }),
        { abortSignal: AbortSignal.timeout(settings.timeoutMs ?? 10_000) },
      );
    },
  };
}

/**
 * Every `*.json` object under `s3://bucket/prefix` (the documents an S3 sink published), as
 * `{ name, text }` with `name` the object's `s3://` URL, in key order. Throws invalid_args when
 * the bucket cannot be listed or read.
 */
export async function readS3Objects(
  location: string,
  settings: S3Settings,
): Promise<Array<{ name: string; text: string }>> {
  const { bucket, prefix } = parseS3Location(location);
  const { s3, client: c } = await client(settings);
  try {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const page = await c.send(
        new s3.ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
        { abortSignal: AbortSignal.timeout(settings.timeoutMs ?? 10_000) },
      );
      for (const o of page.Contents ?? []) if (o.Key?.endsWith('.json')) keys.push(o.Key);
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token !== undefined);
    keys.sort();
    const out: Array<{ name: string; text: string }> = [];
    for (const key of keys) {
      const got = await c.send(new s3.GetObjectCommand({ Bucket: bucket, Key: key }), {
        abortSignal: AbortSignal.timeout(settings.timeoutMs ?? 10_000),
      });
      out.push({ name: `s3://${bucket}/${key}`, text: (await got.Body?.transformToString('utf-8')) ?? '' });
    }
    return out;
  } catch (err) {
    if (err instanceof VerbError) throw err;
    throw new VerbError(
      'invalid_args',
      `Cannot read the anchors at s3://${bucket}/${prefix}: ${(err as Error).name}: ${(err as Error).message}`,
      {
        hint: 'Check the bucket, SOLID_ANCHOR_S3_ENDPOINT, the region and read credentials (AWS_ACCESS_KEY_ID …).',
      },
    );
  } finally {
    c.destroy();
  }
}
