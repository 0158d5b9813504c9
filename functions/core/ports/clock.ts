/** The time, as the application reads it: the wiring passes the system clock, tests their own. */
export interface Clock {
  nowMs(): number;
}
