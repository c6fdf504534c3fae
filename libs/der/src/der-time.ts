import { DerError, TAG } from './der-reader.js';
import type { Tlv } from './der-reader.js';
import { tlv } from './der-writer.js';

// RFC 5280 §4.1.2.5: certificate times are UTCTime (YYMMDDHHMMSSZ) through 2049 and
// GeneralizedTime (YYYYMMDDHHMMSSZ, no fractions) from 2050 on; always UTC, always with seconds.

const UTC_TIME = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/;
const GENERALIZED_TIME = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/;

/** Milliseconds since the epoch of an RFC 5280 UTCTime or GeneralizedTime. */
export function decodeTime(item: Tlv, what: string): number {
  const text = item.content.toString('latin1');
  const match =
    item.tag === TAG.utcTime
      ? UTC_TIME.exec(text)
      : item.tag === TAG.generalizedTime
        ? GENERALIZED_TIME.exec(text)
        : null;
  if (match === null) throw new DerError(`${what} is not an RFC 5280 UTCTime or GeneralizedTime ("${text}")`);
  const [year, month, day, hour, minute, second] = match.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const fullYear = item.tag === TAG.utcTime ? (year >= 50 ? 1900 + year : 2000 + year) : year;
  const ms = Date.UTC(fullYear, month - 1, day, hour, minute, second);
  const check = new Date(ms);
  // Date.UTC rolls 31 February over into March: a date that does not exist is refused instead.
  if (check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    throw new DerError(`${what} is not a valid date ("${text}")`);
  }
  return ms;
}

/** A certificate time for `date` (whole seconds): UTCTime through 2049, GeneralizedTime after. */
export function encodeTime(date: Date): Buffer {
  const iso = date.toISOString();
  const digits = `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 19)}Z`;
  const year = date.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new RangeError(`certificate time ${iso} is outside 1950 to 9999`);
  return year < 2050
    ? tlv(TAG.utcTime, Buffer.from(digits.slice(2), 'latin1'))
    : tlv(TAG.generalizedTime, Buffer.from(digits, 'latin1'));
}
