"""A toolhost run as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format, v1.7).

The inputs are the `toolhost run --json` events (docs/run-events.md) and, when there is one, the
session file (src/agent/record/session-format.ts). The session file holds the model's whole history:
the prompt, each answer with its reasoning, every tool call with its arguments and its result. The
events hold the run's totals. Without a session file the steps come from the events alone, and tool
calls then have no arguments (the events do not carry them).

Plain Python over dicts, with no Harbor or pydantic import, so toolhost's tests run it anywhere;
agent.py validates the result with Harbor's own `Trajectory` model before writing it.

    python3 -m toolhost_harbor.atif EVENTS.jsonl [--session FILE | --home DIR] [--instruction TEXT]

prints `{"trajectory": …, "context": …}`; the context holds the values for Harbor's AgentContext.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

SCHEMA_VERSION = "ATIF-v1.7"
AGENT_NAME = "toolhost"

Json = dict[str, Any]


def read_jsonl(path: Path) -> list[Json]:
    """The objects of a JSONL file; a line that is not one (a torn last line) is skipped."""
    rows: list[Json] = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def find_session(home: Path, session_id: str) -> Path | None:
    """The session file of `session_id` under a TOOLHOST_HOME (sessions/<project>/<id>.jsonl)."""
    if not session_id or "/" in session_id:
        return None
    return next(iter(sorted(home.glob(f"sessions/*/{session_id}.jsonl"))), None)


def current_path(entries: list[Json]) -> list[Json]:
    """The entries from the root to the session's current position, as toolhost restores them.

    Walking in order, a `leaf` entry moves the position to its target and any other entry to itself;
    a parentId that names no earlier entry makes its entry a root (session-format.ts, SessionTree).
    """
    index: dict[str, int] = {}
    parents: list[int] = []
    leaf: int | None = None
    for i, entry in enumerate(entries):
        parent = entry.get("parentId")
        parents.append(index.get(parent, -1) if isinstance(parent, str) else -1)
        entry_id = entry.get("id")
        if isinstance(entry_id, str):
            index.setdefault(entry_id, i)
        if entry.get("type") != "leaf":
            leaf = i
        elif entry.get("targetId") in index:
            leaf = index[entry["targetId"]]
    path: list[Json] = []
    while leaf is not None and leaf >= 0:
        path.append(entries[leaf])
        leaf = parents[leaf]
    return path[::-1]


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and p.get("type") == "text" and isinstance(p.get("text"), str))
    return ""


def _output_text(output: Any) -> str:
    """A tool result's output as the model got it (AI SDK ToolResultOutput)."""
    if not isinstance(output, dict):
        return json.dumps(output)
    kind, value = output.get("type"), output.get("value")
    if kind in ("text", "error-text") and isinstance(value, str):
        return value
    if kind in ("json", "error-json"):
        return json.dumps(value)
    if kind == "content" and isinstance(value, list):
        return "\n".join(p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text")
    if kind == "execution-denied":
        return str(output.get("reason") or "execution denied")
    return json.dumps(output)


def _arguments(value: Any) -> Json:
    """ATIF wants an object; a call's input that is not one (malformed JSON from the model) is wrapped."""
    if isinstance(value, dict):
        return value
    return {} if value is None else {"value": value}


def _clean(obj: Json) -> Json:
    """The object without its None fields (Harbor writes trajectories with exclude_none)."""
    return {k: v for k, v in obj.items() if v is not None}


class _Steps:
    """The steps being built, numbered from 1 when done."""

    def __init__(self) -> None:
        self.steps: list[Json] = []
        self.calls: dict[str, Json] = {}  # tool_call_id → its step

    def add(self, source: str, message: str, at: str | None = None, **fields: Any) -> Json:
        step = _clean({"source": source, "message": message, "timestamp": at, **fields})
        self.steps.append(step)
        for call in step.get("tool_calls", []):
            self.calls[call["tool_call_id"]] = step
        return step

    def observe(self, step: Json, result: Json) -> None:
        step.setdefault("observation", {"results": []})["results"].append(_clean(result))

    def numbered(self) -> list[Json]:
        return [{"step_id": i, **step} for i, step in enumerate(self.steps, start=1)]


def _call_extra(info: Json) -> Json:
    return _clean({"toolhost_call_id": info.get("callId"), "kind": info.get("kind"), "title": info.get("title")})


def steps_from_session(entries: list[Json], model: str | None) -> list[Json]:
    """Steps from the session file's current path: prompts, the model's messages, calls without a model (slash commands)."""
    out = _Steps()
    prompt: str | None = None  # a prompt's text, until the history's copy of it is seen
    unlinked: list[Json] = []  # the model's calls not yet matched with toolhost's record of them
    for entry in current_path(entries):
        kind, at = entry.get("type"), entry.get("at")
        if kind == "user" and isinstance(entry.get("text"), str):
            prompt = entry["text"]
            out.add("user", prompt, at)
        elif kind == "message" and isinstance(entry.get("message"), dict):
            message = entry["message"]
            role, content = message.get("role"), message.get("content")
            if role == "user":
                text = _text_of(content)
                if text != prompt:  # a message of a hook's, not the prompt again
                    out.add("user", text, at)
                prompt = None
            elif role == "system":
                out.add("system", _text_of(content), at)
            elif role == "assistant":
                parts = [{"type": "text", "text": content}] if isinstance(content, str) else content if isinstance(content, list) else []
                parts = [p for p in parts if isinstance(p, dict)]
                texts = [str(p.get("text", "")) for p in parts if p.get("type") == "text"]
                thoughts = [str(p.get("text", "")) for p in parts if p.get("type") == "reasoning"]
                calls = [
                    {"tool_call_id": str(p.get("toolCallId")), "function_name": str(p.get("toolName")), "arguments": _arguments(p.get("input"))}
                    for p in parts
                    if p.get("type") == "tool-call"
                ]
                unlinked.extend(calls)
                out.add(
                    "agent",
                    "".join(texts),
                    at,
                    model_name=model,
                    reasoning_content="\n\n".join(thoughts) or None,
                    tool_calls=calls or None,
                    llm_call_count=1,
                )
            elif role == "tool":
                for part in content if isinstance(content, list) else []:
                    if not isinstance(part, dict) or part.get("type") != "tool-result":
                        continue
                    call_id = str(part.get("toolCallId"))
                    step = out.calls.get(call_id)
                    result = {"source_call_id": call_id if step else None, "content": _output_text(part.get("output"))}
                    out.observe(step or out.add("system", "A tool result without its call", at), result)
        elif kind == "tool_result" and isinstance(entry.get("info"), dict):
            info = entry["info"]
            display = entry.get("display") if isinstance(entry.get("display"), dict) else {}
            # A command that exited non-zero is a completed call whose display says it failed (as `run --json` reports it).
            failed = entry.get("status") == "completed" and display.get("failed") is True
            status = _clean(
                {
                    "status": "failed" if failed else entry.get("status"),
                    "error_code": entry.get("errorCode"),
                    "exit_code": display.get("exitCode") if failed else None,
                }
            )
            # The model's call this is the record of: the first unmatched one of the tool, its arguments first.
            same_tool = [c for c in unlinked if c["function_name"] == info.get("toolId")]
            call = next((c for c in same_tool if c["arguments"] == info.get("args")), same_tool[0] if same_tool else None)
            if call is not None:
                unlinked.remove(call)
                call["extra"] = {**_call_extra(info), **status}
                continue
            # No model's call: a slash command's, run without the model.
            call_id = str(info.get("callId") or entry.get("callId"))
            envelope = entry.get("envelope") if isinstance(entry.get("envelope"), dict) else {}
            text = display.get("text") if isinstance(display.get("text"), str) else json.dumps(envelope.get("data", envelope))
            tool_call = {"tool_call_id": call_id, "function_name": str(info.get("toolId")), "arguments": _arguments(info.get("args"))}
            tool_call["extra"] = {**_call_extra(info), **status}
            step = out.add("agent", "", at, tool_calls=[tool_call], llm_call_count=0)
            out.observe(step, {"source_call_id": call_id, "content": text})
        elif kind == "notice" and isinstance(entry.get("text"), str):
            out.add("system", entry["text"], at, extra={"failed": True} if entry.get("failed") else None)
        elif kind == "compaction" and isinstance(entry.get("summary"), str):
            out.add("system", f"The conversation so far, compacted: {entry['summary']}", at)
    return out.numbered()


def steps_from_events(events: list[Json], instruction: str | None, model: str | None) -> list[Json]:
    """Steps from the events alone: one agent step per model request (each ends with a `usage` event).

    A call's end may come before or after its request's `usage`; a `tool_result` event is a slash
    command's answer (docs/run-events.md), a call run without the model.
    """
    out = _Steps()
    if instruction:
        out.add("user", instruction)
    text: list[str] = []
    thought: list[str] = []
    calls: list[Json] = []
    ends: dict[str, list[Json]] = {}  # what is known of a call whose step is not made yet

    def end_call(step: Json, call_id: str, event: Json) -> None:
        if event.get("type") == "tool_result":
            out.observe(step, {"source_call_id": call_id, "content": event.get("text")})
            return
        call = next(c for c in step["tool_calls"] if c["tool_call_id"] == call_id)
        call["extra"] = _clean({**call.get("extra", {}), "title": event.get("title")})
        result = {"status": event.get("status"), "error_code": event.get("error_code"), "exit_code": event.get("exit_code")}
        out.observe(step, {"source_call_id": call_id, "content": event.get("error"), "extra": _clean(result)})

    def close_request(usage: Json | None, llm_calls: int | None) -> None:
        if not (text or thought or calls or usage is not None):
            return
        extra = _clean({"context_tokens": usage.get("used"), "cache": usage.get("cache")}) if usage else None
        step = out.add(
            "agent",
            "".join(text),
            model_name=model if llm_calls else None,
            reasoning_content="".join(thought) or None,
            tool_calls=list(calls) or None,
            llm_call_count=llm_calls,
            extra=extra or None,
        )
        for call in calls:
            for event in ends.pop(call["tool_call_id"], []):
                end_call(step, call["tool_call_id"], event)
        text.clear(), thought.clear(), calls.clear()

    for event in events:
        kind = event.get("type")
        if kind == "text":
            text.append(str(event.get("delta", "")))
        elif kind == "thought":
            thought.append(str(event.get("delta", "")))
        elif kind == "tool_call_start":
            calls.append({"tool_call_id": str(event.get("id")), "function_name": str(event.get("tool")), "arguments": {}, "extra": {"kind": event.get("kind")}})
        elif kind == "usage":
            close_request(event, 1)
        elif kind in ("tool_call_end", "tool_result"):
            call_id = str(event.get("id"))
            if call_id in out.calls:
                end_call(out.calls[call_id], call_id, event)
                continue
            ends.setdefault(call_id, []).append(event)
            if kind == "tool_result":
                close_request(None, 0)  # a slash command's call: no model request
            if call_id in ends and not any(c["tool_call_id"] == call_id for c in calls):
                # The end of a call never started: a step of its own.
                calls.append({"tool_call_id": call_id, "function_name": str(event.get("tool", "unknown")), "arguments": {}})
                close_request(None, 0)
        elif kind in ("message", "error"):
            out.add("system", str(event.get("text", event.get("message", ""))), extra={"error": True} if kind == "error" else None)
    close_request(None, None)
    return out.numbered()


def _event(events: list[Json], kind: str) -> Json:
    return next((e for e in reversed(events) if e.get("type") == kind), {})


def context_values(events: list[Json]) -> Json:
    """What Harbor's AgentContext gets from the `stop` event's totals: tokens (input includes the cache), cost, metadata."""
    stop = _event(events, "stop")
    totals = stop.get("totals") if isinstance(stop.get("totals"), dict) else None
    ends = [e for e in events if e.get("type") == "tool_call_end"]
    metadata = _clean(
        {
            "session_id": stop.get("session_id") or _event(events, "start").get("session_id"),
            "stop_reason": stop.get("stop_reason"),
            "exit_code": stop.get("exit_code"),
            "requests": totals.get("requests") if totals else None,
            "tool_calls": totals.get("tool_calls") if totals else None,
            "cache_write_tokens": totals.get("cache_write_tokens") if totals else None,
            "failed_calls": sum(1 for e in ends if e.get("status") == "failed"),
            # Refused: a call that would have needed approval (a run asks nothing), docs/run-events.md.
            "refused_calls": sum(1 for e in ends if e.get("error_code") == "permission_denied"),
        }
    )
    if totals is None:
        return {"metadata": {"toolhost": metadata}}
    return {
        "n_input_tokens": totals.get("input_tokens"),
        "n_cache_tokens": totals.get("cache_read_tokens"),
        "n_output_tokens": totals.get("output_tokens"),
        "cost_usd": totals.get("cost_usd"),
        "metadata": {"toolhost": metadata},
    }


def convert(
    events: list[Json],
    session: list[Json] | None = None,
    instruction: str | None = None,
    model: str | None = None,
    version: str | None = None,
) -> Json | None:
    """The trajectory of a run, or None when there is nothing to make one of."""
    start = next((e for e in events if e.get("type") == "start"), {})
    header = next((e for e in session or [] if e.get("type") == "session"), {})
    model = start.get("model") or model
    steps = steps_from_session(session, model) if session else steps_from_events(events, instruction, model)
    if not steps:
        return None
    stop = _event(events, "stop")
    totals = stop.get("totals") if isinstance(stop.get("totals"), dict) else None
    if totals is None and session:
        # No stop event (a run cut short): the session's own count, every turn of it.
        usage = next((e.get("usage") for e in reversed(current_path(session)) if e.get("type") == "turn_end"), None)
        if isinstance(usage, dict):
            totals = {
                "input_tokens": usage.get("inputTokens"),
                "output_tokens": usage.get("outputTokens"),
                "cache_read_tokens": usage.get("cacheReadTokens"),
                "cache_write_tokens": usage.get("cacheWriteTokens"),
                "requests": usage.get("requests"),
                "tool_calls": usage.get("toolCalls"),
            }
    final = {"total_steps": len(steps)}
    if totals:
        final.update(
            total_prompt_tokens=totals.get("input_tokens"),
            total_completion_tokens=totals.get("output_tokens"),
            total_cached_tokens=totals.get("cache_read_tokens"),
            total_cost_usd=totals.get("cost_usd"),
            extra=_clean({k: totals.get(k) for k in ("cache_write_tokens", "requests", "tool_calls")}) or None,
        )
    return _clean(
        {
            "schema_version": SCHEMA_VERSION,
            "session_id": start.get("session_id") or header.get("id"),
            "agent": _clean({"name": AGENT_NAME, "version": start.get("toolhost") or header.get("toolhost") or version or "unknown", "model_name": model}),
            "steps": steps,
            "final_metrics": _clean(final),
            "extra": _clean(
                {
                    "steps_from": "session" if session else "events",
                    "stop_reason": stop.get("stop_reason"),
                    "exit_code": stop.get("exit_code"),
                    "cwd": start.get("cwd") or header.get("cwd"),
                }
            ),
        }
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m toolhost_harbor.atif", description="A toolhost run as an ATIF trajectory.")
    parser.add_argument("events", type=Path, help="the run's `toolhost run --json` output")
    parser.add_argument("--session", type=Path, help="its session file")
    parser.add_argument("--home", type=Path, help="the run's TOOLHOST_HOME, to find the session file in")
    parser.add_argument("--instruction", help="the prompt (the events do not carry it)")
    args = parser.parse_args(argv)
    events = read_jsonl(args.events)
    session_file = args.session
    if session_file is None and args.home is not None:
        session_file = find_session(args.home, str(_event(events, "start").get("session_id", "")))
    session = read_jsonl(session_file) if session_file else None
    trajectory = convert(events, session, args.instruction)
    print(json.dumps({"trajectory": trajectory, "context": context_values(events)}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
