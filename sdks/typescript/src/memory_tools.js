// The five memory tools of the specification (§4.4), ready to offer to the Mind — their
// specs, with the spec's defaults and bounds — and one dispatcher that runs a call against
// `Memory` and renders the tool result text, shaped as the Rust SDK's `call_memory_tool`'s.

import * as limits from './limits.js';
import { MemoryServiceError } from './types.js';

export const PUT = 'service_memory_put';
export const GET = 'service_memory_get';
export const LIST = 'service_memory_list';
export const DELETE = 'service_memory_delete';
export const SEARCH = 'service_memory_search';
export const MEMORY_TOOL_NAMES = Object.freeze([PUT, GET, LIST, DELETE, SEARCH]);

/** @param {string} name */
export function isMemoryTool(name) {
  return MEMORY_TOOL_NAMES.includes(name);
}

/** The specs of the five memory tools, to pass to `Mind.complete`.
 * @returns {import('./types.js').ToolSpec[]} */
export function memoryTools() {
  const key = {
    type: 'string',
    pattern: limits.KEY_PATTERN,
    maxLength: limits.MAX_KEY_CHARS,
    description: 'snake_case identifier, unique per namespace, e.g. `favourite_food`',
  };
  const namespace = (what, withDefault = false) => ({
    type: 'string',
    maxLength: limits.MAX_NAMESPACE_CHARS,
    description: what,
    ...(withDefault ? { default: limits.DEFAULT_NAMESPACE } : {}),
  });
  const tags = (what) => ({
    type: 'array',
    items: { type: 'string', minLength: 1, maxLength: limits.MAX_TAG_CHARS },
    maxItems: limits.MAX_TAGS,
    description: what,
  });
  const limit = (maximum, dflt) => ({ type: 'integer', minimum: 1, maximum, default: dflt });
  const obj = (properties, required) => ({
    type: 'object',
    properties,
    additionalProperties: false,
    ...(required.length ? { required } : {}),
  });
  const filtered = 'only memories carrying every one of these tags';
  return [
    {
      name: PUT,
      description:
        'Save a fact to long-term memory, where it outlives this run. Writing an existing ' +
        'key in the same namespace stores the new value as a new version; an identical ' +
        'value changes nothing. Returns {memory_id, key, namespace}.',
      parameters: obj(
        {
          key,
          value: {
            type: 'string',
            minLength: 1,
            maxLength: limits.MAX_VALUE_CHARS,
            description: 'the text to remember (stringify structured data)',
          },
          namespace: namespace('logical bucket', true),
          tags: tags('labels to filter by later'),
          importance: {
            type: 'number',
            minimum: 1,
            maximum: 10,
            default: 5,
            description: '1 to 10; higher ranks higher in search',
          },
          expires_in_days: {
            type: 'number',
            exclusiveMinimum: 0,
            description: 'leave the memory out of search after this many days (default: never)',
          },
          observed_at: {
            type: 'integer',
            minimum: 0,
            description:
              'when the fact was stated or observed, in epoch milliseconds, if not now',
          },
        },
        ['key', 'value'],
      ),
    },
    {
      name: GET,
      description:
        'Fetch one memory by its exact key. Returns {found: true, value, key, namespace, ' +
        'tags, importance, created_at, updated_at, access_count}, or {found: false} when ' +
        'no memory has that key.',
      parameters: obj({ key, namespace: namespace('where the memory lives', true) }, ['key']),
    },
    {
      name: SEARCH,
      description:
        'Search long-term memory by meaning and keywords, best match first; use it when ' +
        'you do not know the exact key. Returns {results: [{key, value, namespace, tags, ' +
        'importance, score, breakdown, created_at}]}.',
      parameters: obj(
        {
          query: {
            type: 'string',
            minLength: 1,
            description: 'what you are looking for, in natural language',
          },
          namespace: namespace('search only this namespace (default: all)'),
          tags: tags(filtered),
          limit: limit(limits.SEARCH_MAX_LIMIT, limits.SEARCH_DEFAULT_LIMIT),
          mode: { type: 'string', enum: ['hybrid', 'semantic', 'keyword'], default: 'hybrid' },
        },
        ['query'],
      ),
    },
    {
      name: LIST,
      description:
        'List memories, newest first, without ranking. Returns {memories: [{key, value, ' +
        'namespace, tags, importance, created_at, updated_at, access_count}], count}.',
      parameters: obj(
        {
          namespace: namespace('list only this namespace (default: all)'),
          tags: tags(filtered),
          limit: limit(limits.LIST_MAX_LIMIT, limits.LIST_DEFAULT_LIMIT),
        },
        [],
      ),
    },
    {
      name: DELETE,
      description:
        'Delete a memory by its exact key (it leaves get, search and list). Returns ' +
        '{deleted: true}.',
      parameters: obj({ key, namespace: namespace('where the memory lives', true) }, ['key']),
    },
  ];
}

class BadArguments extends Error {}

/** A call's arguments object, read field by field against the schema. */
class Args {
  constructor(args) {
    this.args = args;
  }

  string(name) {
    const value = this.args[name];
    if (value === undefined || value === null) throw new BadArguments(`\`${name}\` is required`);
    if (typeof value !== 'string') throw new BadArguments(`\`${name}\` must be a string`);
    return value;
  }

  optString(name) {
    return this.args[name] == null ? undefined : this.string(name);
  }

  optNumber(name, integer = false) {
    const value = this.args[name];
    if (value == null) return undefined;
    if (typeof value !== 'number' || (integer && !Number.isInteger(value))) {
      throw new BadArguments(`\`${name}\` must be ${integer ? 'an integer' : 'a number'}`);
    }
    return value;
  }

  strings(name) {
    const value = this.args[name];
    if (value == null) return [];
    if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) {
      throw new BadArguments(`\`${name}\` must be an array of strings`);
    }
    return value;
  }
}

function record(m) {
  return {
    value: m.value,
    key: m.key,
    namespace: m.namespace,
    tags: [...m.tags],
    importance: m.importance,
    created_at: m.createdAt,
    updated_at: m.updatedAt,
    access_count: m.accessCount,
  };
}

/** @param {import('./context.js').Memory} memory */
function run(memory, name, a) {
  switch (name) {
    case PUT: {
      const put = memory.put({
        key: a.string('key'),
        value: a.string('value'),
        namespace: a.optString('namespace'),
        tags: a.strings('tags'),
        importance: a.optNumber('importance'),
        expiresInDays: a.optNumber('expires_in_days'),
        observedAt: a.optNumber('observed_at', true),
      });
      return { memory_id: put.memoryId, key: put.key, namespace: put.namespace };
    }
    case GET: {
      const found = memory.get(a.string('key'), a.optString('namespace'));
      return found === undefined ? { found: false } : { found: true, ...record(found) };
    }
    case LIST: {
      const listed = memory.list({
        namespace: a.optString('namespace'),
        tags: a.strings('tags'),
        limit: a.optNumber('limit', true),
      });
      return { memories: listed.map(record), count: listed.length };
    }
    case DELETE:
      memory.delete(a.string('key'), a.optString('namespace'));
      return { deleted: true };
    default: {
      const hits = memory.search({
        query: a.string('query'),
        namespace: a.optString('namespace'),
        tags: a.strings('tags'),
        limit: a.optNumber('limit', true),
        mode: a.optString('mode'),
      });
      return {
        results: hits.map((h) => ({
          key: h.key,
          value: h.value,
          namespace: h.namespace,
          tags: [...h.tags],
          importance: h.importance,
          score: h.score,
          breakdown: {
            semantic: h.breakdown.semantic,
            keyword: h.breakdown.keyword,
            importance: h.breakdown.importance,
            timeDecay: h.breakdown.timeDecay,
          },
          created_at: h.createdAt,
        })),
      };
    }
  }
}

/** Runs a memory tool call; the tool result text, never an exception: JSON shaped as §4.4
 * on success, `Service Memory failed: …` on a failure (the Mind reads it and the run goes
 * on), `Unknown tool …` for another tool's name.
 * @param {import('./context.js').Memory} memory
 * @param {import('./types.js').ToolCall} call */
export function callMemoryTool(memory, call) {
  if (!isMemoryTool(call.name)) {
    return `Unknown tool ${JSON.stringify(call.name)}: the memory tools are ${MEMORY_TOOL_NAMES.join(', ')}.`;
  }
  try {
    const args = JSON.parse(call.argumentsJson);
    if (args === null || typeof args !== 'object' || Array.isArray(args)) {
      throw new BadArguments(`expected a JSON object, got ${call.argumentsJson}`);
    }
    return JSON.stringify(run(memory, call.name, new Args(args)));
  } catch (e) {
    if (e instanceof BadArguments || e instanceof SyntaxError) {
      return `${limits.TOOL_FAILURE_PREFIX}invalid arguments: ${e.message}`;
    }
    if (e instanceof MemoryServiceError) return limits.TOOL_FAILURE_PREFIX + failure(e);
    throw e;
  }
}

/** What the Mind reads of a failed memory call, in the Rust SDK's words. */
function failure(e) {
  const detail = e.detail;
  if (e.kind === 'not_configured') return 'memory channel is not configured.';
  if (e.kind === 'stopped') return 'the agent is stopping';
  if (e.kind === 'quota_exceeded' && !detail.startsWith(limits.QUOTA_EXCEEDED)) {
    return detail ? `${limits.QUOTA_EXCEEDED}: ${detail}` : limits.QUOTA_EXCEEDED;
  }
  return detail;
}
