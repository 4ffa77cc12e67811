// Worker settings read from the environment (SLUICE_BATCH_SIZE and the like).

/** A positive number from the environment, else `fallback`. */
export function positiveSetting(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const v = Number(env[name]);
  return Number.isFinite(v) && v > 0 ? v : fallback;
}
