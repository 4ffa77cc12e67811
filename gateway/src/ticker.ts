/**
 * Runs `tick` every `intervalMs` until stopped, one at a time: the next wait
 * starts when a tick ends, so a slow tick never overlaps the next one. A tick
 * that fails is reported to `onError` and the ticking goes on. The periodic
 * work of a gateway replica (warehouse tasks, backfill runs, paused slots)
 * each holds one.
 */
export class Ticker {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private halted = false;

  constructor(
    private readonly tick: () => Promise<unknown>,
    private readonly onError: (err: unknown) => void,
  ) {}

  get stopped(): boolean {
    return this.halted;
  }

  /** The first tick after `firstDelayMs` (default at once), then every `intervalMs`. */
  start(intervalMs: number, firstDelayMs = 0): this {
    const loop = () => {
      if (this.halted) return;
      this.running = this.tick()
        .catch((err: unknown) => this.onError(err))
        .finally(() => {
          this.running = undefined;
          if (!this.halted) this.timer = setTimeout(loop, intervalMs).unref();
        });
    };
    this.timer = setTimeout(loop, firstDelayMs).unref();
    return this;
  }

  /** No more ticks; resolves once the one running (if any) has ended. */
  async stop(): Promise<void> {
    this.halted = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
