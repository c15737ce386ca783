import { sleep } from "./time.js";

/** A token bucket: `burst` calls at once, then `qps` per second on average. */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  /** Resolves when a token is available, and takes it. */
  async take(): Promise<void> {
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= 1) {
        this.tokens -= 1;
        return;
      }
      await sleep(((1 - this.tokens) / this.qps) * 1000);
    }
  }
}
