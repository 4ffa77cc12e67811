/**
 * SLUICE_WATCH_NAMESPACES (set by the chart): `*` for every namespace (its
 * cluster-scope mode: undefined here), or a comma-separated list; the home
 * namespace (the release's) is always watched and comes first.
 */
export function watchNamespaces(setting: string | undefined, home: string): string[] | undefined {
  if (setting?.trim() === '*') return undefined;
  const listed = (setting ?? '')
    .split(',')
    .map((ns) => ns.trim())
    .filter(Boolean);
  return [...new Set([home, ...listed])];
}
