// An agent that fetches the URL its task names and answers with the status and body;
// what it got is remembered under `fetched`. Used by `typescript_agents::fetch_*`.
export async function run(ctx, task) {
  const response = await fetch(task);
  const body = await response.text();
  ctx.memory.put({ key: 'fetched', value: body, namespace: 'web' });
  return `${response.status} ${body}`;
}
