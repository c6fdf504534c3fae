const MINUTE = 60;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;

/**
 * An age as kubectl shows it (k8s.io/apimachinery/pkg/util/duration.HumanDuration): seconds up
 * to 2 minutes, then minutes (with seconds below 10 minutes), hours (with minutes below 8 hours),
 * days (with hours below 8 days), years (with days below 8 years).
 */
export function humanDuration(milliseconds: number): string {
  const seconds = Math.trunc(milliseconds / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 2 * MINUTE) return `${seconds}s`;
  const minutes = Math.trunc(seconds / MINUTE);
  if (minutes < 10) return withRest(minutes, 'm', seconds % MINUTE, 's');
  if (minutes < 3 * 60) return `${minutes}m`;
  const hours = Math.trunc(seconds / HOUR);
  if (hours < 8) return withRest(hours, 'h', minutes % 60, 'm');
  if (hours < 48) return `${hours}h`;
  const days = Math.trunc(seconds / DAY);
  if (hours < 8 * 24) return withRest(days, 'd', hours % 24, 'h');
  if (hours < 2 * 365 * 24) return `${days}d`;
  const years = Math.trunc(seconds / YEAR);
  if (hours < 8 * 365 * 24) return withRest(years, 'y', days % 365, 'd');
  return `${years}y`;
}

function withRest(major: number, majorUnit: string, rest: number, restUnit: string): string {
  return rest === 0 ? `${major}${majorUnit}` : `${major}${majorUnit}${rest}${restUnit}`;
}
