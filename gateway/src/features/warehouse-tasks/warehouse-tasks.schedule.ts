import { CronExpressionParser } from 'cron-parser';

// Task schedules: a cron expression of five fields (minute resolution) read
// in an IANA time zone, or one of the usual @-names. cron-parser does the
// calendar work, daylight-saving changes included (a slot inside a skipped
// hour runs at the first instant after it; a repeated hour runs once).

const NAMED = ['@hourly', '@daily', '@weekly', '@monthly', '@yearly', '@annually'];

export function checkTimezone(tz: string): string | undefined {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return undefined;
  } catch {
    return `Unknown time zone "${tz}": use an IANA name such as UTC or Europe/Paris`;
  }
}

/** Undefined when `schedule` is a valid five-field cron expression (or @-name); else why not. */
export function checkSchedule(schedule: string): string | undefined {
  const expr = schedule.trim();
  if (!NAMED.includes(expr) && expr.split(/\s+/).length !== 5) {
    return 'A schedule is a cron expression of five fields (minute hour day-of-month month day-of-week), e.g. "0 6 * * 1-5"';
  }
  try {
    CronExpressionParser.parse(expr, { tz: 'UTC' });
    return undefined;
  } catch (err) {
    return `Invalid cron expression: ${(err as Error).message}`;
  }
}

/** The first slot strictly after `after`. */
export function nextRunAfter(schedule: string, timezone: string, after: Date): Date {
  return CronExpressionParser.parse(schedule.trim(), { currentDate: after, tz: timezone }).next().toDate();
}
