// An agent that fetches the URL its task names (`ctx.fetch`: the standard fetch, in the
// component `wasi:http` through the host's egress door) and answers with the status and
// body; what it got is remembered under `fetched`. Used by `typescript_agents::an_async_*`.
export async function run(ctx, task) {
  const response = await ctx.fetch(task);
  const body = await response.text();
  ctx.memory.put({ key: 'fetched', value: body, namespace: 'web' });
  return `${response.status} ${body}`;
}
