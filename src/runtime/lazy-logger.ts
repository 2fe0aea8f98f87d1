/**
 * A pino logger to stderr (fd 2) that loads pino only when something is logged at an enabled
 * level, or the logger is used in any other way (child, flush, a property of pino's own): a CLI
 * command that logs nothing never loads pino and its nine dependencies (issue 36: start-up).
 * Until then `level` reads the level given and a disabled level's method does nothing; after,
 * every access goes to the real pino logger, so lines are pino's own.
 */
import { createRequire } from 'node:module';
import type { Logger } from 'pino';

const require = createRequire(import.meta.url);

/** pino's default levels by name. */
const LEVELS: Readonly<Record<string, number>> = {
  trace: 10,
  debug: 20,
  info: 30,
  warn: 40,
  error: 50,
  fatal: 60,
};

const noop = () => {};

/** `pino({ level }, pino.destination(2))`, created on first real use (see the header). */
export function stderrLogger(level: string): Logger {
  let real: Logger | undefined;
  const load = (): Logger => {
    if (real === undefined) {
      const pino = require('pino') as typeof import('pino').default;
      real = pino({ level }, pino.destination(2));
    }
    return real;
  };
  // A level pino does not know is pino's error to raise, at once as before.
  const threshold = level === 'silent' ? Infinity : LEVELS[level];
  if (threshold === undefined) return load();
  return new Proxy({} as Logger, {
    get(_, key) {
      if (real === undefined) {
        if (key === 'level') return level;
        if (typeof key === 'string' && LEVELS[key] !== undefined && LEVELS[key] < threshold) return noop;
        if (key === 'isLevelEnabled') return (l: string) => (LEVELS[l] ?? Infinity) >= threshold;
      }
      const logger = load();
      const value: unknown = Reflect.get(logger, key, logger);
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(logger) : value;
    },
    set: (_, key, value) => Reflect.set(load(), key, value),
    has: (_, key) => key in load(),
    ownKeys: () => Reflect.ownKeys(load()),
    getOwnPropertyDescriptor: (_, key) => {
      const d = Reflect.getOwnPropertyDescriptor(load(), key);
      return d === undefined ? undefined : { ...d, configurable: true };
    },
    getPrototypeOf: () => Reflect.getPrototypeOf(load()),
  });
}
