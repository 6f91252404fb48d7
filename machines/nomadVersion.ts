/**
 * Nomad release numbers, and the test of whether a release has a change that was released in
 * several lines at once (a fix on main, backported to the maintained release lines).
 *
 * A pre-release or development build (`1.7.0-beta.1`, `2.0.6-dev`) is taken for the release it
 * leads to; build metadata (`+ent`) is ignored.
 */

export interface NomadVersion {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** As the cluster gave it, for messages. */
  readonly text: string;
}

const VERSION = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/;

/** The version in `text` ("1.6.3", "v1.10.0-dev", "1.8.2+ent"), or null when it is not one. */
export function parseNomadVersion(text: string): NomadVersion | null {
  const match = VERSION.exec(text.trim());
  if (match === null) return null;
  return { major: Number(match[1]), minor: Number(match[2]), patch: Number(match[3] ?? 0), text: text.trim() };
}

function parsed(text: string): NomadVersion {
  const version = parseNomadVersion(text);
  if (version === null) throw new Error(`not a Nomad version: ${text}`);
  return version;
}

/** Negative, zero or positive as `a` is older than, the same release as, or newer than `b`. */
export function compareNomadVersions(a: NomadVersion, b: NomadVersion): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

function compareLines(a: NomadVersion, b: NomadVersion): number {
  return a.major - b.major || a.minor - b.minor;
}

/**
 * Whether `version` has a change first released in `releases` (one per release line it shipped
 * in, e.g. ['1.1.13', '1.2.7', '1.3.0']): in a listed line, from that patch on; in a later line,
 * always (it came from the older lines' code); in an earlier line, never.
 */
export function hasChange(version: NomadVersion, releases: readonly string[]): boolean {
  let latestOlderLine: NomadVersion | undefined;
  for (const text of releases) {
    const release = parsed(text);
    const line = compareLines(version, release);
    if (line === 0) return version.patch >= release.patch;
    if (line > 0 && (latestOlderLine === undefined || compareLines(release, latestOlderLine) > 0)) latestOlderLine = release;
  }
  return latestOlderLine !== undefined;
}
