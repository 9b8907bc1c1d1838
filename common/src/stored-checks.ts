import type { AuditResult } from './audit-result.ts';
import type { BudgetReport } from './budgets.ts';
import { DEVICES, LOCATIONS } from './ids.ts';

/**
 * The budget checks the gateway stored with a snapshot, as a report: what `perfwatch update --ci`
 * without budgets of its own and the gateway's forge reports hold a change to. A cell with no
 * checks passes; a result with no cell at all does not.
 */
export function storedChecksReport(result: AuditResult): BudgetReport {
  const cells = DEVICES.flatMap((device) =>
    LOCATIONS.flatMap((location) => {
      const cell = result[device]?.[location];
      return cell
        ? [
            {
              device,
              location,
              checks: (cell.checks ?? []).map(({ key, kind, actual, limit, allowed, pass, message }) => ({
                key,
                kind,
                actual,
                limit,
                ...(allowed === undefined ? {} : { allowed }),
                pass,
                message,
              })),
            },
          ]
        : [];
    }),
  );
  return { pass: cells.length > 0 && cells.every((cell) => cell.checks.every((check) => check.pass)), cells };
}
