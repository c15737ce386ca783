/** The queue's clock is the one every timed part of kubeloop uses: see util/clock.ts. */
export { type Clock, FakeClock, systemClock } from "../util/index.js";
