import { sleep } from "./time.js";

/** A token bucket: `burst` tokens at once, then `qps` per second on average. */
export class TokenBucket {
  private tokens: number;
  private last = performance.now();

  constructor(
    private readonly qps: number,
    private readonly burst: number,
  ) {
    this.tokens = burst;
  }

  /**
   * Resolves when `count` tokens (default 1; at most `burst`) are available, and takes them.
   * A byte-rate limit takes one token per byte, in pieces of at most `burst`.
   */
  async take(count = 1, signal?: AbortSignal): Promise<void> {
    if (count > this.burst)
      throw new RangeError(`take(${count}) can never succeed: the burst is ${this.burst}`);
    for (;;) {
      const now = performance.now();
      this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
      this.last = now;
      if (this.tokens >= count) {
        this.tokens -= count;
        return;
      }
      await sleep(((count - this.tokens) / this.qps) * 1000, signal);
    }
  }
}
