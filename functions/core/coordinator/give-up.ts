/**
 * Give-up: a failure that spends the stage's last try. `maxTries` counts attempts, so with
 * maxTries = 3 the first two failures are NEED_RETRY and the third is GIVE_UP: give up exactly
 * when the tries spent (this failure included) exceed the retries allowed (maxTries − 1).
 */
export function isGiveUp(triesSpentBefore: number, maxTries: number): boolean {
  return triesSpentBefore + 1 >= maxTries;
}
