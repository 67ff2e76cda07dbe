"""A **scripted stand-in** for an agent model: a loopback OpenAI-compatible chat server that
replays a script, so the agent cases run offline and give the same trajectory every time.

It is not a model. For each request it finds the case's question (the text after the last
``Question:`` of the last user message), counts the assistant messages already sent after
that message (the agent's steps so far), and answers with that step of the script for the
question: an assistant message with tool calls, or a text. The script is a mapping of
question to steps, each step ``{tool_calls: [{name, arguments}]}`` or ``{content: text}``;
a question the script lacks gets an ``abstain`` call. The reply is computed from the request
alone (no state), so a retried request gets the same answer. ``usage`` counts a token per
four characters.

Replace it with a real server by changing ``base_url`` and ``model`` (docs/agents.md).
"""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path
from typing import Any

MODEL = "scripted-agent"


def question_of(messages: list[dict[str, Any]]) -> tuple[str, int]:
    """The question of the last user message, and the steps the agent took after it."""
    last = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    content = str(messages[last].get("content") or "") if last >= 0 else ""
    steps = sum(1 for m in messages[last + 1:] if m.get("role") == "assistant")
    return content.rsplit("Question:", 1)[-1].strip(), steps


def reply(script: dict[str, list[dict[str, Any]]], body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion the script gives for ``body``."""
    messages = body.get("messages") or []
    question, step = question_of(messages)
    steps = script.get(question)
    if steps is None:
        steps = [{"tool_calls": [{"name": "abstain",
                                  "arguments": {"reason": "no script for this question"}}]}]
    scripted = steps[min(step, len(steps) - 1)]
    message: dict[str, Any] = {"role": "assistant", "content": scripted.get("content")}
    if scripted.get("tool_calls"):
        message["tool_calls"] = [
            {"id": f"call_{step}_{i}", "type": "function",
             "function": {"name": c["name"],
                          "arguments": c["arguments"] if isinstance(c.get("arguments"), str)
                          else json.dumps(c.get("arguments") or {})}}
            for i, c in enumerate(scripted["tool_calls"])]
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
    return completion(f"chatcmpl-{step}", 0, body.get("model") or MODEL, message, prompt,
                      len(json.dumps(message)) // 4)


def completion(id: str, created: int, model: str, message: dict[str, Any], prompt_tokens: int,
               completion_tokens: int) -> dict[str, Any]:
    """A chat completion of one choice, in the shape of OpenAI's API (the tests' stand-in
    answers in it too)."""
    return {"id": id, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if "tool_calls" in message else "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


class JsonPostHandler(http.server.BaseHTTPRequestHandler):
    """Reads each POST's JSON body and sends what :meth:`answer` makes of it, quietly: the
    HTTP side of a stand-in model (this one, and the tests' OpenAI stand-in)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        """The status, the headers (``Content-Type`` JSON unless given) and the payload."""
        raise NotImplementedError

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        status, headers, payload = self.answer(body)
        self.send_response(status)
        self.send_header("Content-Type", headers.pop("Content-Type", "application/json"))
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _SharedPortServer(http.server.ThreadingHTTPServer):
    """Binds with ``SO_REUSEPORT``: every process of one run (xdist workers, shards) serves
    the same port, and the kernel hands each connection to one of them. The replies depend
    on the request alone, so any of them answers alike."""

    def server_bind(self) -> None:
        import socket

        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        super().server_bind()


def _server(port: int, handler: type[http.server.BaseHTTPRequestHandler],
            ) -> http.server.ThreadingHTTPServer:
    """On ``port`` when it is free or shared with another stand-in, else on any free port."""
    import socket

    if port and hasattr(socket, "SO_REUSEPORT"):
        try:
            return _SharedPortServer(("127.0.0.1", port), handler)
        except OSError:
            pass
    return http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)


def stable_port(*texts: str) -> int:
    """A port (20000-59999) the same in every process that passes the same texts: the
    stand-in's URL, part of each case's identity, then matches across the processes of one
    run, and ``--queryeval-resume`` carries the agent cases a shard already scored."""
    import hashlib

    digest = hashlib.sha256("\0".join(texts).encode()).digest()
    return 20000 + int.from_bytes(digest[:4], "big") % 40000


class ScriptedModel:
    """The server, on a free 127.0.0.1 port; ``requests`` holds every request body."""

    def __init__(self, script: dict[str, list[dict[str, Any]]], port: int = 0) -> None:
        self.script = script
        self.requests: list[dict[str, Any]] = []
        model = self

        class Handler(JsonPostHandler):
            def answer(self, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
                model.requests.append(body)
                if self.path.rstrip("/").endswith("/chat/completions"):
                    return 200, {}, json.dumps(reply(model.script, body)).encode()
                return 404, {}, b'{"error": {"message": "no route"}}'

        self.server = _server(port, Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_port}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @classmethod
    def from_file(cls, path: Path, port: int = 0) -> ScriptedModel:
        import yaml

        return cls(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, port)

    def close(self) -> None:
        # Leave the port's group first: the kernel hands each new connection to one of the
        # listeners sharing the port, and one that still listens while its loop winds down
        # (shutdown() waits up to half a second) queues connections of another run of this
        # folder that are then reset ("cannot connect" in that run: issue 59's e2e soak).
        self.server.socket.close()
        self.server.shutdown()
