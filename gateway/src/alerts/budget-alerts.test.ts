import { describe, expect, it } from 'vitest';
import type { BudgetCheck, LighthouseResult } from '@perfwatch/common';
import { needsConfirmation, settleChecks, type PriorCell } from './budget-alerts.ts';

const check = (pass: boolean, key: BudgetCheck['key'] = 'performance'): BudgetCheck => ({
  key,
  kind: 'budget',
  actual: pass ? 95 : 70,
  limit: 90,
  pass,
  message: `${key} ${pass ? 95 : 70}`,
});
const prior = (states: Record<string, 'passing' | 'failing'>): PriorCell => ({
  lighthouse: {} as LighthouseResult,
  states: new Map(Object.entries(states)),
});

describe('budget alerts: an event on a change of state, a failure only once confirmed', () => {
  it('a failure of a passing check (or one never seen) needs the confirmation run; a failing one does not', () => {
    expect(needsConfirmation([check(false)], undefined)).toBe(true);
    expect(needsConfirmation([check(false)], prior({ 'budget:performance': 'passing' }))).toBe(true);
    expect(needsConfirmation([check(false)], prior({ 'budget:performance': 'failing' }))).toBe(false);
    expect(needsConfirmation([check(true)], undefined)).toBe(false);
  });

  it('passing → failing is announced only when the confirmation run fails the check too', () => {
    const [confirmed] = settleChecks([check(false)], undefined, [check(false)]);
    expect(confirmed).toMatchObject({
      state: 'failing',
      event: 'budget.failed',
      confirmation: { actual: 70, pass: false },
    });
    const [unconfirmed] = settleChecks([check(false)], undefined, [check(true)]);
    expect(unconfirmed).toMatchObject({ pass: false, state: 'passing', confirmation: { actual: 95, pass: true } });
    expect(unconfirmed!.event).toBeUndefined();
    // No result from the confirmation run: nothing is confirmed, nothing announced.
    const [unmeasured] = settleChecks([check(false)], undefined, null);
    expect(unmeasured).toMatchObject({ state: 'passing', confirmation: null });
    expect(unmeasured!.event).toBeUndefined();
  });

  it('failing stays failing without a word; failing → passing is a recovery at once; passing stays quiet', () => {
    const failing = prior({ 'budget:performance': 'failing', 'budget:lcp': 'passing' });
    const [still, quiet] = settleChecks([check(false), check(true, 'lcp')], failing);
    expect(still).toMatchObject({ state: 'failing' });
    expect(still!.event).toBeUndefined();
    expect(still!.confirmation).toBeUndefined();
    expect(quiet).toMatchObject({ state: 'passing' });
    expect(quiet!.event).toBeUndefined();
    const [recovered] = settleChecks([check(true)], failing);
    expect(recovered).toMatchObject({ state: 'passing', event: 'budget.recovered' });
  });

  it("keeps each check's state apart: a budget and a regression on the same key are two checks", () => {
    const regression: BudgetCheck = {
      key: 'performance',
      kind: 'regression',
      actual: 70,
      limit: 90,
      allowed: 5,
      pass: false,
      message: 'dropped',
    };
    const settled = settleChecks([check(true), regression], prior({ 'budget:performance': 'failing' }), [regression]);
    expect(settled.map((c) => [c.kind, c.state, c.event])).toEqual([
      ['budget', 'passing', 'budget.recovered'],
      ['regression', 'failing', 'budget.failed'],
    ]);
  });
});
