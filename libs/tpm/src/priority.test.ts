import { describe, expect, it } from 'vitest';
import { PrioritySerialQueue, withTpmPriority } from './priority.js';

describe('TPM sequence priority', () => {
  it('runs one sequence at a time, and the node’s own work before queued background work', async () => {
    const queue = new PrioritySerialQueue();
    const order: string[] = [];
    let active = 0;
    const job = (name: string) => async () => {
      active++;
      expect(active).toBe(1);
      await new Promise((resolve) => setTimeout(resolve, 5));
      order.push(name);
      active--;
    };
    const strangers = withTpmPriority('background', () =>
      Promise.all(Array.from({ length: 20 }, (_, i) => queue.run(job(`stranger-${i}`)))),
    );
    expect(queue.backgroundWaiting).toBe(19);
    const own = queue.run(job('own'));
    await Promise.all([strangers, own]);
    // The first stranger was already running; the node's own sequence came right after it.
    expect(order.slice(0, 2)).toEqual(['stranger-0', 'own']);
    expect(order).toHaveLength(21);
  });

  it('keeps going after a task that throws, even synchronously', async () => {
    const queue = new PrioritySerialQueue();
    await expect(
      queue.run(() => {
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    await expect(queue.run(() => Promise.reject(new Error('async boom')))).rejects.toThrow('async boom');
    await expect(queue.run(() => Promise.resolve(7))).resolves.toBe(7);
  });
});
