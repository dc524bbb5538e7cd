// The component's side: `HostBackend` answers the `Backend` calls with the imports of the
// `wasmind:agent` world (the shapes jco's bindings give them: camelCase fields, `undefined`
// for `none`, u64 as BigInt, a failed `result` thrown with the error in `payload`), and
// `exportAgent` turns `run(ctx, task)` into the world's `run` export.
//
// Only the component imports this module (`build.js` writes the entry that does): the
// `wasmind:agent/...` modules exist there alone, so natively — where tests use the doubles
// of `testing.js` — nothing imports it.

import * as control from 'wasmind:agent/control@0.1.0';
import * as memory from 'wasmind:agent/memory@0.1.0';
import * as mind from 'wasmind:agent/mind@0.1.0';
import * as progress from 'wasmind:agent/progress@0.1.0';
import * as tools from 'wasmind:agent/tools@0.1.0';

import { Context } from './context.js';
import { MemoryServiceError, MindError, ToolError } from './types.js';

// The bindings' shapes, from `types/` (generated from the WIT: `bin/guest-types.js`), so that
// `tsconfig.json` checks every object this module hands the imports or reads back.
/** @typedef {import('wasmind:agent/mind@0.1.0').ToolSpec} WitToolSpec */
/** @typedef {import('wasmind:agent/mind@0.1.0').Message} WitMessage */
/** @typedef {import('wasmind:agent/memory@0.1.0').PutRequest} WitPutRequest */
/** @typedef {import('wasmind:agent/memory@0.1.0').MemoryRecord} WitMemoryRecord */
/** @typedef {import('wasmind:agent/memory@0.1.0').ListRequest} WitListRequest */
/** @typedef {import('wasmind:agent/memory@0.1.0').SearchRequest} WitSearchRequest */

/** `quota-exceeded` → `quota_exceeded`: a WIT variant case as our error's kind. */
export function snake(tag) {
  return tag.replaceAll('-', '_');
}

/** Calls `f`; a failed `result` (thrown, its variant in `payload`) throws as `Err`. Typed so
 * that `tsconfig.json` checks the arguments against the import's generated declaration.
 * @type {<F extends (...args: any[]) => any>(Err: new (kind: string, message: string) => Error,
 *   f: F, ...args: Parameters<F>) => ReturnType<F>} */
const call = (Err, f, ...args) => {
  try {
    return f(...args);
  } catch (e) {
    const variant = e?.payload;
    if (variant === undefined || typeof variant.tag !== 'string') throw e;
    throw new Err(snake(variant.tag), typeof variant.val === 'string' ? variant.val : '');
  }
};

/** @returns {WitToolSpec} */
const spec = (t) => ({
  name: t.name,
  description: t.description,
  parametersJson: JSON.stringify(t.parameters),
});

const ms = (n) => Number(n);

/** @param {WitMemoryRecord} m */
function record(m) {
  return {
    key: m.key,
    value: m.value,
    namespace: m.namespace,
    tags: [...m.tags],
    importance: m.importance,
    createdAt: ms(m.createdAt),
    updatedAt: ms(m.updatedAt),
    accessCount: ms(m.accessCount),
  };
}

/** @returns {WitPutRequest} */
function putRequest(r) {
  return {
    key: r.key,
    value: r.value,
    namespace: r.namespace,
    tags: [...(r.tags ?? [])],
    importance: r.importance,
    expiresInDays: r.expiresInDays,
  };
}

/** @typedef {import('./context.js').Backend} Backend */

/** The `Backend` over the host's imports.
 * @implements {Backend} */
export class HostBackend {
  complete(messages, offered) {
    const wit = messages.map(/** @returns {WitMessage} */ (m) => ({
      role: m.role,
      content: m.content,
      toolCalls: m.toolCalls.map((c) => ({ ...c })),
      toolCallId: m.toolCallId,
    }));
    const c = call(MindError, mind.complete, wit, offered.map(spec));
    return {
      text: c.text,
      toolCalls: c.toolCalls.map((t) => ({ id: t.id, name: t.name, argumentsJson: t.argumentsJson })),
      usage: { inputTokens: c.usage.inputTokens, outputTokens: c.usage.outputTokens },
    };
  }

  memoryPut(r) {
    const p =
      r.observedAt === undefined
        ? call(MemoryServiceError, memory.put, putRequest(r))
        : call(MemoryServiceError, memory.putObserved, putRequest(r), BigInt(r.observedAt));
    return { memoryId: p.memoryId, key: p.key, namespace: p.namespace };
  }

  memoryGet(key, namespace) {
    const found = call(MemoryServiceError, memory.get, key, namespace);
    return found === undefined ? undefined : record(found);
  }

  memoryList(r) {
    /** @type {WitListRequest} */
    const wit = { namespace: r.namespace, tags: [...(r.tags ?? [])], limit: r.limit };
    return call(MemoryServiceError, memory.list, wit).map(record);
  }

  memoryDelete(key, namespace) {
    call(MemoryServiceError, memory.delete, key, namespace);
  }

  memorySearch(r) {
    /** @type {WitSearchRequest} */
    const wit = {
      query: r.query,
      namespace: r.namespace,
      tags: [...(r.tags ?? [])],
      limit: r.limit,
      mode: r.mode,
    };
    return call(MemoryServiceError, memory.search, wit).map((h) => ({
      key: h.key,
      value: h.value,
      namespace: h.namespace,
      tags: [...h.tags],
      importance: h.importance,
      score: h.score,
      breakdown: { ...h.breakdown },
      createdAt: ms(h.createdAt),
    }));
  }

  report(kind, message) {
    progress.report(kind, message);
  }

  log(kind, message, dataJson) {
    progress.log(kind, message, dataJson);
  }

  toolsList() {
    return tools.list().map((t) => ({
      name: t.name,
      description: t.description,
      parameters: JSON.parse(t.parametersJson),
    }));
  }

  toolsCall(name, argumentsJson) {
    return call(ToolError, tools.call, name, argumentsJson);
  }

  stopRequested() {
    return control.stopRequested();
  }

  async fetch(url, init) {
    const r = await fetch(url, init);
    return { status: r.status, statusText: r.statusText, headers: [...r.headers], body: await r.text() };
  }
}

/** The run's error as the world's `result` wants it thrown: the message, in `payload`. */
function failed(e) {
  const message = e instanceof Error ? e.message : String(e);
  return Object.assign(new Error(message), { payload: message });
}

/** The world's `run` export for the agent `run(ctx, task)`: it returns the final answer,
 * or throws to fail the run — an `AgentFailed`'s message (or any error's) becomes the
 * run's error. `run` may be async (to `await fetch(…)`, which is `wasi:http`, through the
 * host's egress door): componentize-js runs the event loop until its promise settles. */
export function exportAgent(run) {
  return (task) => {
    let answer;
    try {
      answer = run(new Context(new HostBackend()), task);
    } catch (e) {
      throw failed(e);
    }
    return answer instanceof Promise
      ? answer.catch((e) => {
          throw failed(e);
        })
      : answer;
  };
}
