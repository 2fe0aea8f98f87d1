/**
 * The SSE event store of one MCP session on `/mcp` (MCP 2025-11-25 `basic/transports`, SEP-1699:
 * priming events, `retry`, resumption with `Last-Event-ID`). Spec: spec/transports.md §mcp-http.
 *
 * The SDK transport (`eventStore` option) stores every message it writes on a session's SSE
 * streams here, and gives each an event id; with a store it also opens each POST stream of a
 * client that negotiated 2025-11-25 or later with a priming event (an id, empty data and the
 * transport's `retry` in ms), so a client whose stream drops can come back with
 * `GET /mcp` + `Last-Event-ID` and get what it missed.
 *
 * One store per session, so one session can never replay another's events. Bounded: at most
 * `maxEvents` events and `maxBytes` bytes of JSON (the oldest go first); an id that fell out (or
 * never existed) is unknown, and the SDK answers `400` to a resumption naming it.
 */
import type { EventStore } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** The `retry` field of priming events (ms): how long a client waits before it resumes a dropped stream. */
export const DEFAULT_SSE_RETRY_MS = 1000;
/** Events kept per session. */
export const DEFAULT_SSE_MAX_EVENTS = 64;
/** Bytes of JSON kept per session (256 KiB: at most 100 sessions × this in memory). */
export const DEFAULT_SSE_MAX_BYTES = 256 * 1024;

interface StoredEvent {
  id: string;
  streamId: string;
  message: JSONRPCMessage;
  bytes: number;
}

/** A JSON-RPC response (a result or an error): the last message of a POST stream. */
function isResponse(message: JSONRPCMessage): boolean {
  return 'id' in message && ('result' in message || 'error' in message);
}

/** The bounded, in-memory event store of one session (see the module header). */
export class SessionEventStore implements EventStore {
  readonly #events: StoredEvent[] = [];
  readonly #byId = new Map<string, StoredEvent>();
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  #bytes = 0;
  #seq = 0;

  constructor(options: { maxEvents?: number; maxBytes?: number } = {}) {
    this.#maxEvents = options.maxEvents ?? DEFAULT_SSE_MAX_EVENTS;
    this.#maxBytes = options.maxBytes ?? DEFAULT_SSE_MAX_BYTES;
  }

  /** Keep `message` (a priming event stores `{}`) as the next event of `streamId`; its event id. */
  storeEvent(streamId: string, message: JSONRPCMessage): Promise<string> {
    const id = `${streamId}.${++this.#seq}`;
    const event = { id, streamId, message, bytes: JSON.stringify(message).length };
    this.#events.push(event);
    this.#byId.set(id, event);
    this.#bytes += event.bytes;
    while (
      this.#events.length > this.#maxEvents ||
      (this.#bytes > this.#maxBytes && this.#events.length > 0)
    ) {
      const old = this.#events.shift()!;
      this.#byId.delete(old.id);
      this.#bytes -= old.bytes;
    }
    return Promise.resolve(id);
  }

  /** The stream an event belongs to, or undefined for an id this store does not hold. */
  getStreamIdForEventId(eventId: string): Promise<string | undefined> {
    return Promise.resolve(this.#byId.get(eventId)?.streamId);
  }

  /** Send the events of `lastEventId`'s stream stored after it, in order; that stream's id. */
  async replayEventsAfter(
    lastEventId: string,
    { send }: { send: (eventId: string, message: JSONRPCMessage) => Promise<void> },
  ): Promise<string> {
    const last = this.#byId.get(lastEventId);
    if (last === undefined) throw new Error('unknown event id');
    let after = false;
    for (const e of [...this.#events]) {
      if (e === last) after = true;
      else if (after && e.streamId === last.streamId && Object.keys(e.message).length > 0)
        await send(e.id, e.message);
    }
    return last.streamId;
  }

  /**
   * A resumption from `lastEventId` of a stream that is over (its response is stored): the events
   * that followed on it, as `{ id, message }` in order (none when the client already holds the
   * response). Undefined while the stream still runs, or for an unknown id (the SDK transport
   * then resumes it live).
   */
  finishedAfter(lastEventId: string): { id: string; message: JSONRPCMessage }[] | undefined {
    const last = this.#byId.get(lastEventId);
    if (last === undefined) return undefined;
    const stream = this.#events.filter((e) => e.streamId === last.streamId);
    if (!stream.some((e) => isResponse(e.message))) return undefined;
    return stream
      .slice(stream.indexOf(last) + 1)
      .filter((e) => Object.keys(e.message).length > 0)
      .map((e) => ({ id: e.id, message: e.message }));
  }
}
