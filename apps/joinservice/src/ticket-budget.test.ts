import { describe, expect, it } from 'vitest';
import { TicketBudget } from './ticket-budget.js';

describe('TicketBudget', () => {
  it('refuses the ticket past the burst, naming the machine and when to come back', () => {
    let now = 0;
    const budget = new TicketBudget({ burst: 2, refillMs: 60_000, now: () => now });
    budget.take('m', 'machine worker-1');
    budget.take('m', 'machine worker-1');
    expect(() => {
      budget.take('m', 'machine worker-1');
    }).toThrow('machine worker-1 asked for more than 2 tickets in a row; retry in 60 s');
    now = 60_000;
    expect(() => {
      budget.take('m', 'machine worker-1');
    }).not.toThrow();
  });

  it('gets back a ticket given back (a control plane that waited for the join lease), never more than the burst', () => {
    const budget = new TicketBudget({ burst: 2, refillMs: 60_000, now: () => 0 });
    // Waiting in line for the lease: each ask is given back.
    for (let ask = 0; ask < 10; ask++) {
      budget.take('cp', 'machine control-plane-1');
      budget.giveBack('cp');
    }
    budget.giveBack('cp');
    budget.take('cp', 'machine control-plane-1');
    budget.take('cp', 'machine control-plane-1');
    expect(() => {
      budget.take('cp', 'machine control-plane-1');
    }).toThrow(/asked for more than 2 tickets in a row/);
  });
});
