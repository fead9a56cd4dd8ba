/**
 * Where hermes writes a terminal session's files on the host (its shell snapshot `hermes-snap-<id>.sh`, older
 * versions' `hermes-cwd-<id>.txt`): hermes-agent `tools/environments/local.py` `get_temp_dir`, as read at commit
 * 00067189 for the releases before PR #97205: for `TMPDIR`, then `TMP`, then `TEMP`, the backend's `terminal.env`
 * value, else the process's own, when absolute (trailing slashes dropped); else `/tmp`. Releases since PR #97205
 * (2026-08-28) look at `TERMINAL_TEMP_DIR` (`terminal.temp_dir`) first and default to `<HERMES_HOME>/cache/terminal`,
 * which they prune themselves (`cleanup_terminal_temp_cache`): the janitor does not look there (see docs/hermes.md).
 */

/** hermes' temp directory for a backend environment (`terminal.env`) and the process's, by `get_temp_dir`'s order. */
export function hermesTempDir(terminalEnv: Record<string, unknown> | null, env: Record<string, string | undefined>): { dir: string; from: string } {
  for (const name of ['TMPDIR', 'TMP', 'TEMP']) {
    const fromConfig = terminalEnv?.[name];
    const value = (typeof fromConfig === 'string' && fromConfig) || env[name];
    const from = typeof fromConfig === 'string' && fromConfig ? `terminal.env.${name}` : name;
    if (value && value.startsWith('/')) return { dir: value.replace(/\/+$/, '') || '/', from };
  }
  return { dir: '/tmp', from: 'default' };
}

