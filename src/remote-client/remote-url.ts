/**
 * The base URL of a remote `solid serve` (`--url` / `SOLID_API_URL`), checked before any request.
 *
 *   accepted   http:// or https://, a host, optionally a port and a path prefix (a reverse proxy
 *              mounting the API under /solid); a trailing slash is dropped
 *   refused    another scheme or none (`127.0.0.1:4400`), user:password@ (it would travel in
 *              logs and the credentials file's keys; use SOLID_API_KEY or `solid login`), a query
 *              or a fragment
 *
 * The normalised form (`https://solid.example`, `http://127.0.0.1:4400/solid`) is also the key of
 * a stored login (credentials-file.ts). Spec: spec/transports.md §remote.
 */
import { VerbError } from '../runtime/errors.ts';

/** Environment variable naming the remote server. */
export const API_URL_ENV = 'SOLID_API_URL';

/**
 * Normalise a base URL.
 * @throws VerbError invalid_request (exit 2) naming what is wrong, with an example in the hint
 */
export function normalizeBaseUrl(text: string): string {
  const raw = text.trim();
  const example =
    'e.g. --url http://127.0.0.1:4400 (the address `solid serve` prints) or https://solid.example.com';
  if (raw === '')
    throw new VerbError('invalid_request', 'The server URL is empty.', {
      hint: `Pass the base URL of a running \`solid serve\`, ${example}.`,
    });
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(raw)) {
    throw new VerbError(
      'invalid_request',
      `The server URL "${raw.slice(0, 200)}" has no http:// or https:// scheme.`,
      { hint: `Write the scheme out, ${example}.` },
    );
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new VerbError('invalid_request', `The server URL "${raw.slice(0, 200)}" is not a valid URL.`, {
      hint: `Check the host and port, ${example}.`,
    });
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new VerbError(
      'invalid_request',
      `The server URL must use http or https, not ${url.protocol.replace(/:$/, '')}.`,
      { hint: example },
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new VerbError('invalid_request', 'The server URL must not carry a user name or password.', {
      hint: 'Give the API key with SOLID_API_KEY, --api-key or `solid login` instead.',
    });
  }
  if (url.search !== '' || url.hash !== '') {
    throw new VerbError('invalid_request', 'The server URL must not have a query or a fragment.', {
      hint: `Use the base URL only, ${example}.`,
    });
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}
