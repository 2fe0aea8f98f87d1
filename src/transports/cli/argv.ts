/**
 * What an invocation's raw argv says before commander parses it: the command words, the global
 * options' values, and whether the verbs' shortcut commands may be needed. Imports nothing heavy,
 * so the CLI's entry point can pick the command modules to load (issue 36).
 * Spec: spec/transports.md §cli, §cli-shortcuts.
 */
import type { Command } from 'commander';

/** The subcommand of `parent` named (or aliased) `word`, if any. */
export function childNamed(parent: Command, word: string): Command | undefined {
  return parent.commands.find((c) => c.name() === word || c.aliases().includes(word));
}

/** The value of a global option in raw argv (`--db X`, `--db=X`), before commander parses. */
export function peekOption(argv: readonly string[], name: string): string | undefined {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === `--${name}`) return argv[i + 1];
    if (a.startsWith(`--${name}=`)) return a.slice(name.length + 3);
  }
  return undefined;
}

/** Every value of a repeatable global option (`--pack a --pack b`). */
export function peekOptions(argv: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === `--${name}` && argv[i + 1] !== undefined) out.push(argv[++i]!);
    else if (a.startsWith(`--${name}=`)) out.push(a.slice(name.length + 3));
  }
  return out;
}

/** The words of argv that are not options or option values of the global options. */
export function commandWords(argv: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '--') break;
    if (a === '--db' || a === '--url' || a === '--pack' || a === '--config') {
      i++;
      continue;
    }
    if (a.startsWith('-')) {
      if (out.length === 0 && (a === '--help' || a === '-h')) out.push('help');
      continue;
    }
    out.push(a);
    if (out.length === 2) break;
  }
  return out;
}

/** Does this invocation possibly need the shortcuts (see the header)? */
export function needsShortcuts(program: Command, argv: readonly string[]): boolean {
  const [first, second] = commandWords(argv);
  if (first === undefined || first === 'help') return true;
  const builtin = childNamed(program, first);
  if (builtin === undefined) return true;
  if (builtin.commands.length === 0) return false;
  return second === undefined || childNamed(builtin, second) === undefined;
}
