/**
 * The work one screen of one command line may do: every syntax node converted and every word
 * expanded is charged here, across the nested `sh -c` strings too, so the whole screen is
 * linear in the input with a fixed ceiling (LIMITS.commandScreenMaxWork).
 */
export class BudgetExceeded extends Error {}

export class Budget {
  private used = 0;

  constructor(readonly limit: number) {}

  /** Charges `units`; throws {@link BudgetExceeded} past the limit. */
  spend(units: number): void {
    this.used += units;
    if (this.used > this.limit) throw new BudgetExceeded();
  }

  /** Units charged so far (tests read it to show the work is linear). */
  get spent(): number {
    return this.used;
  }
}
