/**
 * One shared clock for countdowns and relative times: a single interval for
 * the whole page instead of one per row.
 */
class Clock {
  now = $state(Date.now());
  private timer: ReturnType<typeof setInterval> | null = null;

  start(periodMs = 250): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.now = Date.now();
    }, periodMs);
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

export const clock = new Clock();
