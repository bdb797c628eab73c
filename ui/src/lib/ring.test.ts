import { describe, expect, it } from 'vitest';
import { Ring } from './ring';

describe('Ring', () => {
  it('keeps items in order and indexes from the oldest', () => {
    const r = new Ring<number>(5);
    for (let i = 0; i < 3; i++) r.push(i);
    expect(r.length).toBe(3);
    expect(r.toArray()).toEqual([0, 1, 2]);
    expect(r.at(-1)).toBeUndefined();
    expect(r.at(3)).toBeUndefined();
    expect(r.last()).toBe(2);
  });

  it('is bounded: evicts the oldest and counts what it dropped', () => {
    const r = new Ring<number>(4);
    const evicted: (number | undefined)[] = [];
    for (let i = 0; i < 7; i++) evicted.push(r.push(i));
    expect(r.length).toBe(4);
    expect(r.toArray()).toEqual([3, 4, 5, 6]);
    expect(evicted).toEqual([undefined, undefined, undefined, undefined, 0, 1, 2]);
    expect(r.dropped).toBe(3);
  });

  it('holds 100,000 rows and stays bounded past that', () => {
    const r = new Ring<{ id: number }>(100_000);
    for (let i = 0; i < 130_000; i++) r.push({ id: i });
    expect(r.length).toBe(100_000);
    expect(r.at(0)?.id).toBe(30_000);
    expect(r.last()?.id).toBe(129_999);
    expect(r.dropped).toBe(30_000);
  });

  it('refuses a capacity that is not a positive integer', () => {
    expect(() => new Ring(0)).toThrow(RangeError);
    expect(() => new Ring(1.5)).toThrow(RangeError);
  });
});
