// Test doubles for node's test runner: an agent's `run(ctx, task)` runs natively against a
// scripted Mind, an in-memory memory with the host's checks, a progress recorder,
// registered tools of the test's making, a scripted web and a stop flag — and `checkReplay`, which tells
// whether the agent replays the way a server resuming it after a restart needs.

import { inspect } from 'node:util';

import { Context } from './context.js';
import * as limits from './limits.js';
import { AgentFailed, MemoryServiceError, MindError, ToolError } from './types.js';

const KEY = new RegExp(limits.KEY_PATTERN);

/** Answers each `complete` with the next scripted completion (or throws the next scripted
 * `MindError`); past the script, `unavailable`. `requests` keeps what it was asked. */
export class ScriptedMind {
  /** @param {Array<import('./types.js').Completion | MindError>} script */
  constructor(script = []) {
    this.script = [...script];
    /** @type {Array<{ messages: import('./types.js').Message[], tools: import('./types.js').ToolSpec[] }>} */
    this.requests = [];
  }

  then(step) {
    this.script.push(step);
    return this;
  }

  /** The next call fails `stopped`, as a stop request makes it. */
  thenStop() {
    return this.then(new MindError('stopped'));
  }

  remaining() {
    return this.script.length;
  }

  complete(messages, tools) {
    this.requests.push({ messages: [...messages], tools: [...tools] });
    if (this.script.length === 0) {
      throw new MindError('unavailable', 'the scripted Mind has no answer left');
    }
    const step = this.script.shift();
    if (step instanceof MindError) throw step;
    return step;
  }
}

/** Memory with the host's checks (key, value, tags, importance; a quota when given),
 * versions per key, and a keyword search (the words of the query found in the value or
 * key, ranked by how many). */
export class InMemoryMemory {
  /** @param {{ quota?: number }} [options] */
  constructor({ quota } = {}) {
    this.quota = quota;
    /** @type {Map<string, Array<{ record: import('./types.js').MemoryRecord, deleted: boolean }>>} */
    this.versions = new Map();
    this.ids = 0;
    this.clock = Date.now();
  }

  live() {
    return [...this.versions.values()]
      .filter((v) => !v.at(-1).deleted)
      .map((v) => v.at(-1).record)
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  get size() {
    return this.live().length;
  }

  /** The live memory, without counting an access. */
  peek(namespace, key) {
    const versions = this.versions.get(`${namespace}\0${key}`);
    return !versions || versions.at(-1).deleted ? undefined : versions.at(-1).record;
  }

  versionCount(namespace, key) {
    return this.versions.get(`${namespace}\0${key}`)?.length ?? 0;
  }

  put(r) {
    check(r);
    const namespace = r.namespace ?? limits.DEFAULT_NAMESPACE;
    const tags = [...(r.tags ?? [])];
    if (this.quota !== undefined && this.peek(namespace, r.key) === undefined) {
      if (this.size >= this.quota) {
        throw new MemoryServiceError(
          'quota_exceeded',
          `memory quota exceeded: ${this.quota} live memories`,
        );
      }
    }
    const id = `${namespace}\0${r.key}`;
    const versions = this.versions.get(id) ?? [];
    this.versions.set(id, versions);
    const now = ++this.clock;
    const current = versions.length && !versions.at(-1).deleted ? versions.at(-1).record : undefined;
    if (current && current.value === r.value && current.tags.join('\0') === tags.join('\0')) {
      return { memoryId: `mem_${r.key}`, key: r.key, namespace };
    }
    this.ids += 1;
    const record = {
      key: r.key,
      value: r.value,
      namespace,
      tags,
      importance: r.importance ?? limits.DEFAULT_IMPORTANCE,
      createdAt: current ? current.createdAt : now,
      updatedAt: now,
      accessCount: 0,
    };
    versions.push({ record, deleted: false });
    return { memoryId: `mem_${this.ids}`, key: r.key, namespace };
  }

  get(key, namespace) {
    const found = this.peek(namespace ?? limits.DEFAULT_NAMESPACE, key);
    if (found === undefined) return undefined;
    const counted = { ...found, accessCount: found.accessCount + 1 };
    this.versions.get(`${found.namespace}\0${key}`).at(-1).record = counted;
    return counted;
  }

  list(r = {}) {
    const limit = Math.min(r.limit ?? limits.LIST_DEFAULT_LIMIT, limits.LIST_MAX_LIMIT);
    return this.live()
      .filter((m) => matches(m, r.namespace, r.tags))
      .slice(0, limit);
  }

  delete(key, namespace) {
    const ns = namespace ?? limits.DEFAULT_NAMESPACE;
    if (this.peek(ns, key) === undefined) {
      throw new MemoryServiceError('not_found', `no live memory at key ${JSON.stringify(key)}`);
    }
    this.versions.get(`${ns}\0${key}`).at(-1).deleted = true;
  }

  search(r) {
    const words = new Set(r.query.toLowerCase().split(/\W+/).filter(Boolean));
    const limit = Math.min(r.limit ?? limits.SEARCH_DEFAULT_LIMIT, limits.SEARCH_MAX_LIMIT);
    const scored = [];
    for (const m of this.live()) {
      if (!matches(m, r.namespace, r.tags)) continue;
      const found = new Set(`${m.key} ${m.value}`.toLowerCase().replaceAll('_', ' ').split(/\W+/));
      const hits = [...words].filter((w) => found.has(w)).length;
      if (!hits) continue;
      const keyword = hits / words.size;
      const importance = m.importance / limits.MAX_IMPORTANCE;
      scored.push({
        key: m.key,
        value: m.value,
        namespace: m.namespace,
        tags: [...m.tags],
        importance: m.importance,
        score: 0.8 * keyword + 0.2 * importance,
        breakdown: { semantic: 0, keyword, importance, timeDecay: 1 },
        createdAt: m.createdAt,
      });
    }
    return scored.sort((a, b) => b.score - a.score).slice(0, limit);
  }
}

function matches(m, namespace, tags = []) {
  return (namespace == null || m.namespace === namespace) && tags.every((t) => m.tags.includes(t));
}

/** The host's checks of a put, with its texts' gist. */
function check(r) {
  const problems = [];
  const tags = r.tags ?? [];
  if (!KEY.test(r.key) || r.key.length > limits.MAX_KEY_CHARS) {
    problems.push(`key ${JSON.stringify(r.key)} must be snake_case (at most ${limits.MAX_KEY_CHARS})`);
  }
  if (!r.value || r.value.length > limits.MAX_VALUE_CHARS) {
    problems.push(`value must hold 1 to ${limits.MAX_VALUE_CHARS} characters`);
  }
  if (tags.length > limits.MAX_TAGS || tags.some((t) => !t || t.length > limits.MAX_TAG_CHARS)) {
    problems.push(`at most ${limits.MAX_TAGS} tags of 1 to ${limits.MAX_TAG_CHARS} characters`);
  }
  const i = r.importance;
  if (i != null && !(i >= limits.MIN_IMPORTANCE && i <= limits.MAX_IMPORTANCE)) {
    problems.push('importance must be from 1 to 10');
  }
  if (problems.length) throw new MemoryServiceError('invalid', problems.join('; '));
}

/** Keeps the reports and log events, in order. */
export class ProgressRecorder {
  constructor() {
    /** @type {Array<[string, string]>} */
    this.reports = [];
    /** @type {Array<{ kind: string, message: string, dataJson?: string }>} */
    this.logs = [];
  }

  reportsOf(kind) {
    return this.reports.filter(([k]) => k === kind).map(([, m]) => m);
  }

  logsOf(kind) {
    return this.logs.filter((e) => e.kind === kind).map((e) => e.message);
  }
}

/** Registered tools of the test's making: `tool(spec, run)` where `run` takes the parsed
 * arguments and returns the result text or throws `ToolError`. */
export class FakeTools {
  constructor() {
    this.tools = new Map();
    /** @type {Array<[string, string]>} */
    this.calls = [];
  }

  tool(spec, run) {
    this.tools.set(spec.name, { spec, run });
    return this;
  }

  list() {
    return [...this.tools.values()].map((t) => t.spec);
  }

  call(name, argumentsJson) {
    this.calls.push([name, argumentsJson]);
    const tool = this.tools.get(name);
    if (!tool) throw new ToolError('unknown', `no tool named ${JSON.stringify(name)}`);
    let args;
    try {
      args = JSON.parse(argumentsJson);
    } catch (e) {
      throw new ToolError('invalid_arguments', e.message);
    }
    return tool.run(args);
  }
}

/** The web as a test scripts it: `page(url, body, { status, headers })` answers `ctx.fetch`
 * of that URL (any method); any other URL is refused as the host's egress door refuses
 * one (a `TypeError`, as `fetch`'s own). Requests are kept in `requests`. */
export class FakeWeb {
  constructor() {
    this.pages = new Map();
    /** @type {Array<{ url: string, method: string, body: string | undefined }>} */
    this.requests = [];
  }

  page(url, body, { status = 200, headers = {} } = {}) {
    this.pages.set(url, { status, body, headers: Object.entries(headers) });
    return this;
  }

  /** @returns {import('./context.js').Fetched} */
  fetch(url, init = {}) {
    const body = typeof init.body === 'string' ? init.body : undefined;
    this.requests.push({ url, method: init.method ?? 'GET', body });
    const page = this.pages.get(url);
    if (!page) throw new TypeError(`NetworkError when attempting to fetch resource (${url} is not on the FakeWeb)`);
    return { status: page.status, statusText: '', headers: page.headers, body: page.body };
  }
}

/** The doubles, and a `Context` over them (`t.ctx`): `t.mind`, `t.memory` (`undefined` for
 * an agent given no memory — `withoutMemory`: its calls fail `not_configured`),
 * `t.progress`, `t.tools`, `t.web` (what `ctx.fetch` reaches), and `t.requestStop()`. */
export class TestContext {
  /** @param {{ mind?: ScriptedMind, memory?: InMemoryMemory, tools?: FakeTools,
   *   web?: FakeWeb, withoutMemory?: boolean }} [doubles] */
  constructor({ mind, memory, tools, web, withoutMemory = false } = {}) {
    this.mind = mind ?? new ScriptedMind();
    this.memory = withoutMemory ? undefined : (memory ?? new InMemoryMemory());
    this.progress = new ProgressRecorder();
    this.tools = tools ?? new FakeTools();
    this.web = web ?? new FakeWeb();
    this.stopped = false;
    this.ctx = new Context(doubles(this));
  }

  requestStop() {
    this.stopped = true;
  }
}

/** The `Backend` over a `TestContext`'s doubles.
 * @returns {import('./context.js').Backend} */
function doubles(t) {
  const memory = () => {
    if (t.memory === undefined) throw new MemoryServiceError('not_configured');
    if (t.stopped) throw new MemoryServiceError('stopped');
    return t.memory;
  };
  return {
    complete(messages, tools) {
      if (t.stopped) throw new MindError('stopped');
      return t.mind.complete(messages, tools);
    },
    memoryPut: (r) => memory().put(r),
    memoryGet: (key, namespace) => memory().get(key, namespace),
    memoryList: (r) => memory().list(r),
    memoryDelete: (key, namespace) => memory().delete(key, namespace),
    memorySearch: (r) => memory().search(r),
    report: (kind, message) => void t.progress.reports.push([kind, message]),
    log: (kind, message, dataJson) => void t.progress.logs.push({ kind, message, dataJson }),
    toolsList: () => t.tools.list(),
    toolsCall(name, argumentsJson) {
      if (t.stopped) throw new ToolError('stopped');
      return t.tools.call(name, argumentsJson);
    },
    stopRequested: () => t.stopped,
    fetch: async (url, init) => t.web.fetch(url, init),
  };
}

/** Where a replayed run departed from the recorded one: at call `step` (1, 2, …) it made
 * `made` where the first run made `recorded`. */
export class ReplayDiverged extends Error {
  constructor(step, made, recorded) {
    super(`the agent does not replay: at call ${step} it made ${made}, where the first run made ${recorded}`);
    this.name = 'ReplayDiverged';
    Object.assign(this, { step, made, recorded });
  }
}

const DIVERGED = 'the replay diverged';
const BACKEND_CALLS = [
  'complete',
  'memoryPut',
  'memoryGet',
  'memoryList',
  'memoryDelete',
  'memorySearch',
  'report',
  'log',
  'toolsList',
  'toolsCall',
  'stopRequested',
  'fetch',
];

/** Every host call, recorded with its outcome (a result, or the error thrown); on replay,
 * the recorded outcomes answer. */
class Tape {
  constructor(inner) {
    /** @type {Array<{ made: string, ok: boolean, outcome: any }>} */
    this.calls = [];
    /** @type {number | undefined} */
    this.replay = undefined;
    /** @type {ReplayDiverged | undefined} */
    this.diverged = undefined;
    /** @type {import('./context.js').Backend} */
    this.backend = Object.fromEntries(
      BACKEND_CALLS.map((name) => [name, (...args) => this.call(inner, name, args)]),
    );
  }

  call(inner, name, args) {
    const made = `${name}(${args.map((a) => inspect(a, { depth: null, compact: true })).join(', ')})`;
    if (this.replay !== undefined) return this.answer(name, made);
    try {
      const result = inner[name](...args);
      this.calls.push({ made, ok: true, outcome: result });
      return result;
    } catch (e) {
      this.calls.push({ made, ok: false, outcome: e });
      throw e;
    }
  }

  answer(name, made) {
    const step = this.replay;
    if (this.diverged === undefined) {
      const recorded = this.calls[step];
      if (recorded && recorded.made === made) {
        this.replay = step + 1;
        if (recorded.ok) return recorded.outcome;
        throw recorded.outcome;
      }
      this.diverged = new ReplayDiverged(
        step + 1,
        made,
        recorded ? recorded.made : 'no further call (it had returned)',
      );
    }
    // Diverged: the agent is let finish as fast as it can.
    if (name === 'stopRequested') return true;
    if (name === 'fetch') return Promise.reject(new TypeError(DIVERGED));
    if (name === 'report' || name === 'log') return undefined;
    if (name.startsWith('memory')) throw new MemoryServiceError('internal', DIVERGED);
    if (name.startsWith('tools')) throw new ToolError('failed', DIVERGED);
    throw new MindError('unavailable', DIVERGED);
  }
}

/** Runs `agent` on `task` over `t`, then again with the first run's results answering its
 * host calls, as a server resuming it after a restart does; returns the calls it made, in
 * order, or throws `ReplayDiverged` where the second run departed from the first (another
 * call, another argument, a call more or fewer, another outcome). The doubles of `t` see
 * the first run only. An agent replays when all the outside data it uses comes through its
 * host calls (the clock and random do, in the component: the host journals them — but not
 * here, so an agent whose calls depend on them fails this). For an `async` agent (one that
 * uses `ctx.fetch`), it returns a promise of the same.
 * @param {TestContext} t @param {string} task
 * @param {(ctx: Context, task: string) => string | Promise<string>} agent
 * @returns {string[] | Promise<string[]>} */
export function checkReplay(t, task, agent) {
  const tape = new Tape(t.ctx.backend);
  const ctx = new Context(tape.backend);
  const failed = (e) => {
    if (e instanceof AgentFailed) return `failed ${JSON.stringify(e.message)}`;
    if (tape.diverged === undefined) throw e;
    return `failed ${JSON.stringify(DIVERGED)}`;
  };
  const answered = (answer) => `answered ${JSON.stringify(answer)}`;
  const outcome = () => {
    let answer;
    try {
      answer = agent(ctx, task);
    } catch (e) {
      return failed(e);
    }
    return answer instanceof Promise ? answer.then(answered, failed) : answered(answer);
  };
  const verdict = (first, second) => {
    if (tape.diverged) throw tape.diverged;
    if (tape.replay < tape.calls.length) {
      throw new ReplayDiverged(tape.replay + 1, 'no further call (it returned)', tape.calls[tape.replay].made);
    }
    if (first !== second) {
      throw new ReplayDiverged(tape.replay + 1, `the outcome ${second}`, `the outcome ${first}`);
    }
    return tape.calls.map((c) => c.made);
  };
  const first = outcome();
  if (first instanceof Promise) {
    return first.then(async (settled) => {
      tape.replay = 0;
      return verdict(settled, await outcome());
    });
  }
  tape.replay = 0;
  const second = outcome();
  return verdict(first, /** @type {string} */ (second));
}
