import type { Clock } from "../core/ports/clock.ts";

/** The system clock, which the wiring passes to the application (the core never reads the time). */
export const systemClock: Clock = { nowMs: () => Date.now() };
