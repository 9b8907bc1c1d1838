import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { capitalizeUpdateType, formatApiDateTime, type OverviewRecord } from '@perfwatch/common';
import { overviewBodySchema, overviewQuerySchema, parseRequest } from '../request-params.ts';
import type { KpiRow, Store } from '../store/store.ts';
import { written } from './written.ts';

const DAY_MS = 86_400_000;
/** Bytes gathered before a write: few syscalls, and still a small, fixed amount of memory. */
const CHUNK_BYTES = 64 * 1024;

/**
 * A KPI row as the JSON text of its OverviewRecord, members in the record's order. Written out
 * rather than JSON.stringify of an object: `data` is already JSON text, and parsing and
 * re-serialising a million of them was most of the overview's cost (bench/overview-memory.ts).
 * Its unit test holds it equal to JSON.stringify of the record.
 */
export function overviewRecordJson(row: KpiRow): string {
  const record: Omit<OverviewRecord, 'data'> = {
    date: formatApiDateTime(row.date),
    domain: row.domain,
    url: row.url,
    device: row.device,
    location: row.location,
    updateType: capitalizeUpdateType(row.updateType),
    section: row.section,
    kpi: row.kpi,
  };
  return `${JSON.stringify(record).slice(0, -1)},"data":${row.dataJson}}`;
}

/**
 * `GET|POST /v1/overview`: the caller's KPI records in a date range. The JSON array is written
 * as the database cursor yields, respecting the socket's back-pressure, so the gateway's memory
 * stays flat for a million records. A failure after the first byte cannot become an error
 * envelope any more: the connection is cut, so a client never takes a truncated array for a
 * whole one. A client that stops reading for `stallMs` is cut off the same way, and the cursor
 * (or the embedded store's statement, with its read snapshot) is released: a reader who walks
 * away does not hold the database.
 */
export function overviewRoute({ store, logger, stallMs = 30_000 }: { store: Store; logger: Logger; stallMs?: number }) {
  return async (req: Request, res: Response): Promise<void> => {
    const params = parseRequest(req, { query: overviewQuerySchema, body: overviewBodySchema });
    const rows = store.streamKpis({
      userId: req.caller!.userId,
      from: params.startDate,
      to: new Date(params.endDate.getTime() + DAY_MS),
      domain: params.domain,
      updateType: params.updateType,
      sections: params.sections?.map((s) => s.toUpperCase()),
    });
    const iterator = rows[Symbol.asyncIterator]();
    // The first read happens before any byte is sent, so a database that is down is still a 500 envelope.
    let next = await iterator.next();
    res.status(200).type('application/json');
    let buffer = '[';
    let count = 0;
    try {
      reading: while (!next.done) {
        for (const row of next.value) {
          buffer += (count === 0 ? '' : ',') + overviewRecordJson(row);
          count++;
          if (buffer.length >= CHUNK_BYTES) {
            if (!(await written(res, buffer, stallMs))) {
              logger.warn({ requestId: req.requestId, records: count, stallMs }, 'overview reader stopped reading; cut off');
              res.destroy();
              break reading;
            }
            buffer = '';
          }
        }
        if (res.destroyed) break;
        next = await iterator.next();
      }
      res.end(`${buffer}]`);
    } catch (error) {
      logger.error({ err: error, requestId: req.requestId, records: count }, 'overview stream failed');
      res.destroy(error as Error);
    } finally {
      await iterator.return?.();
    }
  };
}
