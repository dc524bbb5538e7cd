"""An agent that keeps notes (the Python twin of `examples/notes-agent`): it asks the Mind
for a short plan, recalls what memory already holds on the task, works through the SDK's
tool loop with both in its prompt, and files the result as a note under a key derived
from the task (so the same task run again updates its note, as a new version)."""

from wasmind_sdk import (
    AgentFailed,
    Context,
    LogKind,
    MemoryServiceError,
    Message,
    MindError,
    PutRequest,
    SearchHit,
    SearchRequest,
    ToolLoop,
    export_agent,
    limits,
)

# Where notes are filed.
NOTES_NAMESPACE = "notes"

PLAN_PROMPT = (
    "Write a short plan (at most five numbered steps) for the task the user gives. "
    "Plan only; do not do the task."
)
WORK_PROMPT = (
    "You are a diligent assistant with a long-term memory (the service_memory_* tools). "
    "Follow your plan, use memory where it helps, and answer with the result alone, "
    "without tool calls, when done."
)
# Memories recalled into the prompt, at most.
RECALL = 5


def run(ctx: Context, task: str) -> str:
    """Plans, recalls, works, files the note."""
    plan = _plan(ctx, task)
    recalled = _recall(ctx, task)
    prompt = f"{WORK_PROMPT}\n\nYour plan:\n{plan}"
    if recalled:
        prompt += "\n\nWhat your memory already holds on this task:"
        for hit in recalled:
            prompt += f"\n- {hit.key} ({hit.namespace}): {hit.value}"
    answer = ToolLoop(prompt).max_steps(15).run(ctx, task)
    _file_note(ctx, task, answer)
    return answer


# The component's `run` export.
WitWorld = export_agent(run)


def _plan(ctx: Context, task: str) -> str:
    """Asks the Mind for a plan (no tools) and logs it as thinking."""
    if ctx.stop_requested():
        raise AgentFailed("stopped")
    ctx.progress.report("info", "planning")
    try:
        completion = ctx.mind.complete([Message.system(PLAN_PROMPT), Message.user(task)])
    except MindError as e:
        if e.kind == "stopped" or ctx.stop_requested():
            raise AgentFailed("stopped") from None
        raise AgentFailed(str(e)) from None
    plan = completion.text or ""
    ctx.progress.log(LogKind.THINKING, plan)
    return plan


def _recall(ctx: Context, task: str) -> list[SearchHit]:
    """Searches memory for the task; an unavailable memory just means nothing is recalled."""
    try:
        hits = ctx.memory.search(SearchRequest(task, limit=RECALL))
    except MemoryServiceError as e:
        ctx.progress.log(LogKind.THINKING, f"Recalling nothing: {e}")
        return []
    ctx.progress.report("info", f"recalled {len(hits)} memories")
    return hits


def _file_note(ctx: Context, task: str, answer: str) -> None:
    """Writes the note; a failure is reported, not fatal (the answer stands)."""
    value = f"Task: {task}\n\nResult: {answer}"[: limits.MAX_VALUE_CHARS]
    note = PutRequest(note_key(task), value, namespace=NOTES_NAMESPACE, tags=("note",))
    try:
        put = ctx.memory.put(note)
    except MemoryServiceError as e:
        ctx.progress.report("info", f"could not file the note: {e}")
        return
    ctx.progress.report("info", f"filed note {put.key}")


def note_key(task: str) -> str:
    """`note_` + the task's first words in snake_case + a hash of the whole task: stable for
    one task, distinct between tasks that start alike, always a valid key — the same key
    the Rust notes agent derives."""
    words = [w.lower() for w in _ascii_words(task)][:6]
    key = "note"
    for word in words:
        if len(key) + len(word) + 1 > 80:
            break
        key += "_" + word
    # FNV-1a: tiny, stable across builds and platforms.
    h = 0xCBF29CE484222325
    for b in task.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return f"{key}_{h & 0xFFFFFFFF:08x}"


def _ascii_words(text: str) -> list[str]:
    words, word = [], ""
    for c in text:
        if c.isascii() and c.isalnum():
            word += c
        elif word:
            words.append(word)
            word = ""
    return words + [word] if word else words
