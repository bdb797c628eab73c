import { describe, expect, it } from 'vitest';
import {
  breakerLook,
  sourceWord,
  bytes,
  callLook,
  callTimes,
  count,
  countdown,
  duration,
  endedCause,
  endedShort,
  errorLook,
  healthLook,
  percent,
  relative,
  riskLook,
  secondsLeft,
  serverDown,
  tokens,
} from './format';
import { CLAUDE } from '../dev/fixtures';

describe('durations', () => {
  it('reads µs, ms, s and minutes', () => {
    expect(duration(0)).toBe('0 µs');
    expect(duration(840)).toBe('840 µs');
    expect(duration(1_000)).toBe('1 ms');
    expect(duration(12_400)).toBe('12.4 ms');
    expect(duration(412_000)).toBe('412 ms');
    expect(duration(3_240_000)).toBe('3.2 s');
    expect(duration(42_000_000)).toBe('42 s');
    expect(duration(125_000_000)).toBe('2 min 5 s');
    expect(duration(3_600_000_000)).toBe('1 h');
    expect(duration(-1)).toBe('—');
    expect(duration(Number.NaN)).toBe('—');
  });

  it('counts down as m:ss and says seconds in words', () => {
    expect(countdown(65_000)).toBe('1:05');
    expect(countdown(9_001)).toBe('0:10');
    expect(countdown(-5)).toBe('0:00');
    expect(countdown(3_725_000)).toBe('1:02:05');
    expect(secondsLeft(12_000)).toBe('12 s');
    expect(secondsLeft(125_000)).toBe('2 min 5 s');
    expect(secondsLeft(120_000)).toBe('2 min');
  });

  it('says relative times', () => {
    const now = 1_000_000_000;
    expect(relative(now - 1_000, now)).toBe('just now');
    expect(relative(now - 12_000, now)).toBe('12 s ago');
    expect(relative(now - 5 * 60_000, now)).toBe('5 min ago');
    expect(relative(now - 3 * 3_600_000, now)).toBe('3 h ago');
    expect(relative(now - 2 * 86_400_000, now)).toBe('2 d ago');
    expect(relative(now + 30_000, now)).toBe('in 30 s');
    expect(relative(now + 5 * 86_400_000 - 1_000, now)).toBe('in 5 d');
    expect(relative(now + 3 * 3_600_000, now)).toBe('in 3 h');
  });

  it('reads bytes and percentages', () => {
    expect(bytes(0)).toBe('0 B');
    expect(bytes(512)).toBe('512 B');
    expect(bytes(1536)).toBe('1.5 KB');
    expect(bytes(12 * 1024 * 1024)).toBe('12 MB');
    expect(bytes(-3)).toBe('—');
    expect(percent(0)).toBe('0%');
    expect(percent(4.23)).toBe('4.2%');
    expect(percent(62.5)).toBe('63%');
  });
});

describe('states always have a word and an icon', () => {
  it('risk', () => {
    expect(riskLook('critical')).toEqual({ tone: 'danger', icon: 'octagon', word: 'Critical' });
    expect(riskLook('medium').tone).toBe('warn');
    expect(riskLook('high').tone).toBe('high');
    expect(riskLook('low').tone).toBe('info');
  });

  it('call outcomes by error class', () => {
    expect(callLook({ outcome: 'ok' }).word).toBe('OK');
    expect(callLook({ outcome: 'running' }).tone).toBe('info');
    expect(callLook({ outcome: 'running' }, true)).toMatchObject({ tone: 'warn', word: 'Waiting' });
    expect(callLook({ outcome: 'tool_error' }).word).toBe('Tool error');
    // The two timeouts read apart: nobody deciding vs the tool running long.
    expect(callLook({ outcome: 'error', error_kind: 'approval_timed_out' })).toMatchObject({ tone: 'high', word: 'No decision in time' });
    expect(callLook({ outcome: 'error', error_kind: 'timeout' })).toMatchObject({ tone: 'high', word: 'Tool timed out' });
    expect(callLook({ outcome: 'error', error_kind: 'denied' })).toMatchObject({ tone: 'danger', word: 'Denied by a person' });
    expect(callLook({ outcome: 'error', error_kind: null }).word).toBe('Error');
    expect(errorLook('breaker_open').word).toBe('Breaker open');
    expect(errorLook('upstream_5xx').word).toBe('Upstream server error');
    expect(errorLook('some_new_class').word).toBe('some new class');
    expect(callLook({ outcome: 'cancelled', error_kind: 'cancelled' })).toMatchObject({ tone: 'muted', word: 'Cancelled' });
  });

  it('every look carries a word and an icon', () => {
    const looks = [
      breakerLook('open'),
      breakerLook('half_open'),
      breakerLook('closed'),
      healthLook(0),
      healthLook(5),
      healthLook(15),
      healthLook(60),
      ...(['low', 'medium', 'high', 'critical'] as const).map(riskLook),
    ];
    for (const l of looks) {
      expect(l.word.length).toBeGreaterThan(0);
      expect(l.icon.length).toBeGreaterThan(0);
    }
    expect(breakerLook('half_open').word).toBe('Half-open');
    expect(healthLook(30).word).toBe('Failing');
  });

  it('servers count as down while failed or restarting', () => {
    expect(serverDown('failed')).toBe(true);
    expect(serverDown('restarting')).toBe(true);
    expect(serverDown('stopped')).toBe(false);
    expect(serverDown('ready')).toBe(false);
  });
});

describe('words about how a request ended', () => {
  const ended = { cause: 'Denied from the CLI (pid 42) — “not now”', short: 'From the CLI (pid 42)' };
  it('are the engine’s, except for a decision this window made', () => {
    expect(endedCause(ended, 'denied', 'not now', false)).toBe(ended.cause);
    expect(endedShort(ended, 'denied', false)).toBe(ended.short);
    expect(endedCause(ended, 'denied', 'not on main', true)).toBe('Denied by you — “not on main”');
    expect(endedShort(ended, 'approved', true)).toBe('By you');
  });
  it('fall back to the state’s word before the engine said more', () => {
    expect(endedCause(null, 'timed_out', null, false)).toBe('No decision in time');
    expect(endedShort(null, 'cancelled', false)).toBe('Cancelled');
  });
});

describe('sourceWord', () => {
  it('says where a tool came from in words', () => {
    expect(sourceWord('builtin')).toBe('built-in');
    expect(sourceWord('mcp:github')).toBe('server github');
    expect(sourceWord('plugin:jira')).toBe('plugin jira');
    expect(sourceWord('agent:a1:b')).toBe('agent a1:b');
  });
});

describe('callTimes', () => {
  it('says which calls the times are over, and only what so few calls can carry', () => {
    const one = callTimes({ p50: 16.3, p90: 16.3, p99: 16.3, calls: 1 });
    expect(one.over).toBe('Last call');
    expect(one.words).toBe('its last call took 16.3 ms');
    expect(one.figures).toEqual([{ label: 'took', value: '16.3 ms' }]);
    const few = callTimes({ p50: 16.3, p90: 40, p99: 41, calls: 4 });
    expect(few.over).toBe('Last 4 calls');
    expect(few.figures.map((f) => f.label)).toEqual(['median']);
    const many = callTimes({ p50: 16.3, p90: 40, p99: 41, calls: 256 });
    expect(many.figures.map((f) => f.label)).toEqual(['median', 'p90', 'p99']);
    expect(many.words).toBe('call time over its last 256 calls: median 16.3 ms, 90th percentile 40 ms, 99th percentile 41 ms');
  });
});

describe('counts', () => {
  it('separates thousands, and says tokens', () => {
    expect(count(0)).toBe('0');
    expect(count(999)).toBe('999');
    expect(count(1_000)).toBe('1,000');
    expect(count(200_000)).toBe('200,000');
    expect(count(1_234_567.4)).toBe('1,234,567');
    expect(tokens(1)).toBe('1 token');
    expect(tokens(41_250)).toBe('41,250 tokens');
  });
});
