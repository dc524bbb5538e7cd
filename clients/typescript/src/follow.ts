/**
 * Following an agent by polling `GET /api/v1/agents/{id}`: the public API has no streaming
 * (specification §6), so each poll's progress is compared with the last one's and only the
 * new entries are passed on.
 */
import type { Agent, AgentProgress } from "./types.js";

/** A progress entry seen for the first time, or the end of the run with the final record. */
export type FollowEvent = { type: "progress"; entry: AgentProgress } | { type: "end"; agent: Agent };

export interface FollowOptions {
  /** Milliseconds between polls (default 1,000). */
  intervalMs?: number;
  /** Stops following: the iteration throws the signal's reason. */
  signal?: AbortSignal;
}

const TERMINAL: ReadonlySet<Agent["status"]> = new Set(["completed", "failed", "stopped"]);

/** Yields each new progress entry of the agent once, then `end` when its status is terminal. */
export async function* follow(
  get: () => Promise<Agent>,
  options: FollowOptions = {},
): AsyncGenerator<FollowEvent, void, undefined> {
  const { intervalMs = 1000, signal } = options;
  let seen: AgentProgress[] = [];
  for (;;) {
    signal?.throwIfAborted();
    const agent = await get();
    for (const entry of fresh(seen, agent.progress)) {
      yield { type: "progress", entry };
    }
    seen = agent.progress;
    if (TERMINAL.has(agent.status)) {
      yield { type: "end", agent };
      return;
    }
    await sleep(intervalMs, signal);
  }
}

/**
 * The entries of `current` that `previous` lacked. The server appends entries and drops
 * the oldest beyond its cap (500), so `current` is a tail of `previous` followed by the new
 * ones: the longest tail of `previous` that `current` starts with marks where they begin.
 */
export function fresh(previous: readonly AgentProgress[], current: readonly AgentProgress[]): AgentProgress[] {
  for (let start = 0; start < previous.length; start++) {
    const overlap = previous.length - start;
    if (overlap <= current.length && previous.slice(start).every((entry, i) => same(entry, current[i]))) {
      return current.slice(overlap);
    }
  }
  return [...current];
}

function same(a: AgentProgress, b: AgentProgress | undefined): boolean {
  return b !== undefined && a.ts === b.ts && a.kind === b.kind && a.message === b.message;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const done = () => {
      signal?.removeEventListener("abort", aborted);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const aborted = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", aborted, { once: true });
  });
}
