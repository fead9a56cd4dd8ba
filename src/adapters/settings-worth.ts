/**
 * What a home's settings are worth on this run's engines (core/setting-worth.ts has the rule): as root over a home
 * another user owns, whether that user could act on every engine of the run directly. A unix socket tells it: the
 * user owns it, or is in its group (primary or supplementary, `/etc/group`) and the group may read and write it, or
 * everyone may. An engine found by discovery may be any of the usual sockets that exist here: the user must be able to
 * use each. An engine over TCP or ssh cannot be told: no access. Also the registry of the settings refused this run
 * (`untrusted-setting`), each said once.
 */
import fs from 'node:fs';
import { AS_WRITTEN, type SettingsWorth, type UntrustedSetting } from '../core/setting-worth.js';
import { describeController } from '../core/trust.js';
import type { EngineEndpoint } from './engine-host.js';
import { NAMES, homeAccess, rootRules } from './trust.js';

/** The groups a user is in: their primary group and every group listing them (`/etc/group`'s fourth field). */
function groupsOf(gid: number, name: string | null): Set<number> {
  const out = new Set([gid]);
  if (name === null) return out;
  let text = '';
  try {
    text = fs.readFileSync('/etc/group', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length >= 4 && f[3]!.split(',').includes(name)) out.add(Number(f[2]));
  }
  return out;
}

/** Whether the user may use the socket at `file` (and why), or why not. */
function socketAccess(file: string, user: { uid: number; gid: number; name: string | null }, groups: Set<number>): { ok: boolean; why: string } {
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch (err) {
    return { ok: false, why: `${file} cannot be looked at (${(err as NodeJS.ErrnoException).code ?? 'error'})` };
  }
  const mode = (st.mode & 0o777).toString(8).padStart(4, '0');
  if (st.uid === user.uid) return { ok: true, why: `owns ${file}` };
  if ((st.mode & 0o006) === 0o006) return { ok: true, why: `${file} is open to every user (${mode})` };
  if (groups.has(st.gid) && (st.mode & 0o060) === 0o060)
    return { ok: true, why: `is in ${describeController({ kind: 'group', id: st.gid }, NAMES)} of ${file}` };
  const owner = `${NAMES.user(st.uid) ?? st.uid}:${NAMES.group(st.gid) ?? st.gid} ${mode}`;
  return { ok: false, why: `no access to ${file} (${owner})` };
}

/** The sockets an endpoint may be: its own, or (left to discovery) each of the usual ones that exists here. */
async function socketsOf(e: EngineEndpoint, env: Record<string, string | undefined>, homedir: string): Promise<string[] | null> {
  if (!e.socketPath) return null;
  if (!e.discover) return [e.socketPath];
  const { discoveryCandidates } = await import('./engine-discovery.js');
  const found = discoveryCandidates({ env, homedir })
    .candidates.map((c) => c.path)
    .filter((p) => fs.statSync(p, { throwIfNoEntry: false })?.isSocket());
  return found.length ? found : [e.socketPath];
}

/** Whether `user` could act on every engine of the run directly, and the first reason either way. */
export async function engineAccess(
  user: { uid: number; gid: number; name: string | null },
  endpoints: readonly EngineEndpoint[],
  where: { env: Record<string, string | undefined>; homedir: string },
): Promise<{ ok: boolean; why: string }> {
  const groups = groupsOf(user.gid, user.name);
  const reasons: string[] = [];
  for (const e of endpoints) {
    const sockets = await socketsOf(e, where.env, where.homedir);
    if (sockets === null) return { ok: false, why: `${e.host} is not a local socket: whether they can use it cannot be told` };
    for (const s of sockets) {
      const a = socketAccess(s, user, groups);
      if (!a.ok) return a;
      reasons.push(a.why);
    }
  }
  return { ok: true, why: [...new Set(reasons)].join('; ') || 'no engine' };
}

const known = new Map<string, SettingsWorth>();

/**
 * What the settings of `home` are worth on the run's engines (memoised per home and engines): as written when the
 * janitor is not root, over a home only root controls, or when the home's owner can act on every engine; else
 * `keep-more`.
 */
export async function settingsWorth(
  home: string,
  endpoints: readonly EngineEndpoint[],
  where: { env: Record<string, string | undefined>; homedir: string },
): Promise<SettingsWorth> {
  if (!rootRules()) return AS_WRITTEN;
  const key = JSON.stringify([home, endpoints.map((e) => [e.host, e.discover === true])]);
  const memo = known.get(key);
  if (memo) return memo;
  const owner = homeAccess(home).owner;
  let worth: SettingsWorth;
  if (owner === null) worth = { worth: 'as-written', why: 'a home only root controls' };
  else {
    const who = describeController({ kind: 'user', id: owner.uid }, NAMES);
    const access = await engineAccess(owner, endpoints, where);
    worth = access.ok ? { worth: 'as-written', why: `${who} ${access.why}` } : { worth: 'keep-more', who, why: access.why };
  }
  known.set(key, worth);
  return worth;
}

const refused = new Map<string, UntrustedSetting>();
const said = new Set<string>();

/** Records a setting refused for the run (each file, key and value once). */
export function noteUntrusted(u: UntrustedSetting): void {
  const key = JSON.stringify([u.file, u.setting, u.value]);
  if (!refused.has(key)) refused.set(key, u);
}

/** Every setting refused so far in this process, in the order met. */
export function untrustedSettings(): UntrustedSetting[] {
  return [...refused.values()];
}

/** The refusals not yet said (each said once per process: a line on stderr, a notice of `watch`). */
export function unsaidUntrusted(): UntrustedSetting[] {
  const out = [...refused.entries()].filter(([k]) => !said.has(k));
  for (const [k] of out) said.add(k);
  return out.map(([, u]) => u);
}
