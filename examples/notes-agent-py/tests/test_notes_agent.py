"""The notes agent against the SDK's doubles, as `examples/notes-agent`'s own tests."""

import re

import pytest

from notes_agent import NOTES_NAMESPACE, note_key, run
from wasmind_sdk import AgentFailed, Completion, LogKind, PutRequest, ToolCall, limits
from wasmind_sdk.testing import ScriptedMind, TestContext, check_replay

TASK = "Suggest a weekend trip from Lisbon"


def test_replays():
    """A server resuming it after a restart runs it again on the recorded results: it
    must make the same calls."""
    t = TestContext(
        ScriptedMind(
            [
                Completion.answer("1. Recall preferences\n2. Pick a town"),
                Completion.calls(
                    ToolCall.new(
                        "c1", "service_memory_put", {"key": "trip_style", "value": "by train"}
                    )
                ),
                Completion.answer("Go to Sintra by train."),
            ]
        )
    )
    calls = check_replay(t, TASK, run)
    assert any(c.startswith("memory_search(") for c in calls)
    assert sum(c.startswith("memory_put(") for c in calls) == 2


def test_plans_recalls_works_and_files_a_note():
    t = TestContext(
        ScriptedMind(
            [
                Completion.answer("1. Recall preferences\n2. Pick a town"),
                Completion.calls(ToolCall.new("c1", "service_memory_get", {"key": "budget"})),
                Completion.answer("Go to Sintra by train."),
            ]
        )
    )
    t.ctx.memory.put(PutRequest("trip_style", "likes trips from Lisbon by train"))

    assert run(t.ctx, TASK) == "Go to Sintra by train."

    requests = t.mind.requests
    assert requests[0].tools == (), "planning offers no tools"
    prompt = requests[1].messages[0].content
    assert "1. Recall preferences" in prompt
    assert "trip_style (default): likes trips from Lisbon by train" in prompt
    assert t.progress.logs_of(LogKind.THINKING)[0] == "1. Recall preferences\n2. Pick a town"
    note = t.memory.peek(NOTES_NAMESPACE, note_key(TASK))
    assert note.value.endswith("Result: Go to Sintra by train."), note.value
    assert note.tags == ("note",)


def test_the_same_task_updates_its_note():
    t = TestContext(
        ScriptedMind(
            [
                Completion.answer("plan"),
                Completion.answer("first answer"),
                Completion.answer("plan"),
                Completion.answer("second answer"),
            ]
        )
    )
    run(t.ctx, TASK)
    run(t.ctx, TASK)

    assert t.memory.version_count(NOTES_NAMESPACE, note_key(TASK)) == 2
    assert t.memory.peek(NOTES_NAMESPACE, note_key(TASK)).value.endswith("second answer")
    # The second run recalled the first run's note into its prompt.
    assert "first answer" in t.mind.requests[3].messages[0].content


def test_works_without_memory():
    t = TestContext(
        ScriptedMind([Completion.answer("plan"), Completion.answer("done")]),
        without_memory=True,
    )
    assert run(t.ctx, TASK) == "done"
    assert any(m.startswith("could not file the note") for m in t.progress.reports_of("info"))


def test_a_stop_while_planning_ends_the_run():
    t = TestContext(ScriptedMind().then_stop())
    with pytest.raises(AgentFailed, match="^stopped$"):
        run(t.ctx, TASK)
    assert len(t.memory) == 0


def test_note_keys_are_valid_and_stable():
    key = note_key(TASK)
    assert key.startswith("note_suggest_a_weekend_trip_from_lisbon_"), key
    assert key == note_key(TASK)
    assert key != note_key("Suggest a weekend trip from Lisbon, cheaply")
    assert note_key("¿¡").startswith("note_")
    long = note_key("supercalifragilistic " * 20)
    assert len(long) <= limits.MAX_KEY_CHARS
    for k in (key, long):
        assert re.fullmatch(limits.KEY_PATTERN, k), k
