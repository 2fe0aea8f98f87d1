/**
 * FrameGuard: bounds one newline-delimited JSON-RPC frame on the MCP stdio byte stream, before the
 * SDK's line reader sees it.
 *
 * The SDK's StdioServerTransport buffers stdin until a newline and, past 10 MiB
 * (STDIO_DEFAULT_MAX_BUFFER_SIZE), throws and closes the transport: the server used to exit with
 * status 0 and nothing said why. The guard sits in front of it:
 *
 *   - a frame (the bytes of one line, without its `\n` / `\r\n`) of at most `maxFrameBytes`
 *     (default DEFAULT_STDIO_FRAME_BYTES = 1 MiB, HTTP's body limit; at most
 *     MAX_STDIO_FRAME_BYTES = 10 MiB, the SDK's own buffer) is passed on whole, one line per
 *     `onLine` call — so a frame the HTTP transport would refuse is refused here too, before it
 *     is parsed (unguarded, a 9.9 MB `macros.save` frame was parsed, committed, then answered
 *     result_too_large);
 *   - a longer frame is dropped: the bytes held so far are released and every byte up to the
 *     next newline is discarded as it arrives, so memory stays at most `maxFrameBytes` plus one
 *     chunk; `onOversize` is called once per such frame, when it crosses the limit, with the
 *     JSON-RPC `id` read back from its first ID_SCAN_BYTES (4 KiB) when that is certain
 *     (`recoverFrameId`), else null. The next line is served normally.
 *
 * What the caller answers is its choice (serveStdio: a JSON-RPC -32600 error for a recovered id,
 * a log line on stderr always). Spec: spec/transports.md §mcp-stdio.
 */

/** Largest MCP stdio frame limit one may configure (10 MiB = 10 485 760, the SDK's own buffer limit). */
export const MAX_STDIO_FRAME_BYTES = 10 * 1024 * 1024;

/**
 * Default MCP stdio frame limit in bytes: 1 MiB = 1 048 576, the same as the HTTP transport's
 * default body limit (src/transports/http/server.ts DEFAULT_BODY_LIMIT_BYTES), so one message is
 * bounded alike on every transport. `solid mcp --max-frame-bytes` / SOLID_MAX_FRAME_BYTES change it.
 */
export const DEFAULT_STDIO_FRAME_BYTES = 1_048_576;

/** How many leading bytes of an oversize frame are kept to read its `id` back (4 KiB). */
export const ID_SCAN_BYTES = 4096;

/** A frame refused for its size. */
export interface OversizeFrame {
  /** The frame's JSON-RPC id when its first bytes show it with certainty, else null. */
  id: string | number | null;
  /** Bytes of the frame seen when it crossed the limit (> limitBytes; the frame may be longer). */
  bytesSeen: number;
  limitBytes: number;
}

export interface FrameGuardOptions {
  /** Default DEFAULT_STDIO_FRAME_BYTES (1 MiB); at most MAX_STDIO_FRAME_BYTES. */
  maxFrameBytes?: number;
  /** One whole line, newline included, at most maxFrameBytes + 2 bytes. */
  onLine: (line: Buffer) => void;
  onOversize: (frame: OversizeFrame) => void;
}

const NL = 0x0a;
const CR = 0x0d;

/** Splits a byte stream into bounded lines (see the header). Feed it with `push(chunk)`. */
export class FrameGuard {
  readonly maxFrameBytes: number;
  private parts: Buffer[] = [];
  private size = 0;
  private discarding = false;

  constructor(private readonly options: FrameGuardOptions) {
    this.maxFrameBytes = Math.min(options.maxFrameBytes ?? DEFAULT_STDIO_FRAME_BYTES, MAX_STDIO_FRAME_BYTES);
  }

  /** Take the next chunk of the stream (a string is read as UTF-8). */
  push(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let pos = 0;
    while (pos < buf.length) {
      const nl = buf.indexOf(NL, pos);
      if (this.discarding) {
        if (nl === -1) return;
        this.discarding = false;
        pos = nl + 1;
        continue;
      }
      if (nl === -1) {
        const rest = buf.subarray(pos);
        // One byte of slack: a CR ending the bytes so far may be the first half of a CRLF.
        if (this.size + rest.length > this.maxFrameBytes + 1) this.refuse(rest, true);
        else {
          this.parts.push(rest);
          this.size += rest.length;
        }
        return;
      }
      const piece = buf.subarray(pos, nl + 1);
      // Frame bytes: without the newline and a CR before it.
      let frameBytes = this.size + (nl - pos);
      if (frameBytes > 0 && (nl > pos ? buf[nl - 1] : this.lastByte()) === CR) frameBytes -= 1;
      if (frameBytes > this.maxFrameBytes) this.refuse(piece, false);
      else {
        const line = this.parts.length === 0 ? piece : Buffer.concat([...this.parts, piece]);
        this.parts = [];
        this.size = 0;
        this.options.onLine(line);
      }
      pos = nl + 1;
    }
  }

  private lastByte(): number | undefined {
    const last = this.parts[this.parts.length - 1];
    return last === undefined ? undefined : last[last.length - 1];
  }

  private refuse(tail: Buffer, more: boolean): void {
    const all = [...this.parts, tail];
    const seen = this.size + tail.length;
    const head = Buffer.concat(all, Math.min(ID_SCAN_BYTES, seen));
    this.parts = [];
    this.size = 0;
    this.discarding = more;
    this.options.onOversize({ id: recoverFrameId(head), bytesSeen: seen, limitBytes: this.maxFrameBytes });
  }
}

const WS = /[ \t\r\n]*/y;
// eslint-disable-next-line no-control-regex -- JSON strings exclude raw control characters
const STRING = /"(?:[^"\\\u0000-\u001f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"/y;
const NUMBER = /-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?/y;
const LITERAL = /(?:true|false|null)/y;

/**
 * The JSON-RPC `id` of a frame from its first bytes, or null when not certain: the bytes must
 * open a JSON object whose top-level members, read in order up to an `"id"` member, are
 * well-formed, and that member's value must be a string or a safe integer followed by `,`, `}` or
 * whitespace inside the bytes (a number cut by the end of `head` is not trusted). Pure.
 */
export function recoverFrameId(head: Buffer | string): string | number | null {
  const s = typeof head === 'string' ? head : head.toString('utf8');
  let pos = 0;
  const ws = () => {
    WS.lastIndex = pos;
    WS.exec(s);
    pos = WS.lastIndex;
  };
  const token = (re: RegExp): string | null => {
    re.lastIndex = pos;
    const m = re.exec(s);
    if (m === null) return null;
    pos = re.lastIndex;
    return m[0];
  };
  ws();
  if (s[pos] !== '{') return null;
  pos += 1;
  for (;;) {
    ws();
    const key = token(STRING);
    if (key === null) return null;
    ws();
    if (s[pos] !== ':') return null;
    pos += 1;
    ws();
    if (JSON.parse(key) === 'id') {
      const raw = token(STRING) ?? token(NUMBER);
      if (raw === null || pos >= s.length || !/[ \t\r\n,}]/.test(s[pos]!)) return null;
      const id = JSON.parse(raw) as unknown;
      if (typeof id === 'string') return id;
      return typeof id === 'number' && Number.isSafeInteger(id) ? id : null;
    }
    if (!skipValue()) return null;
    ws();
    if (s[pos] === ',') {
      pos += 1;
      continue;
    }
    return null; // `}` (no id) or not JSON
  }

  function skipValue(): boolean {
    const c = s[pos];
    if (c === '"') return token(STRING) !== null;
    if (c === '{' || c === '[') {
      let depth = 0;
      while (pos < s.length) {
        const d = s[pos];
        if (d === '"') {
          if (token(STRING) === null) return false;
          continue;
        }
        if (d === '{' || d === '[') depth += 1;
        else if (d === '}' || d === ']') depth -= 1;
        pos += 1;
        if (depth === 0) return true;
      }
      return false;
    }
    return (token(NUMBER) ?? token(LITERAL)) !== null;
  }
}
