#!/usr/bin/env python3
"""Fake LLM API server for troupe's tests. Python 3.11 standard library only (asyncio streams).

CLI: python3 fake_model_server.py --script SCRIPT.json [--port 0] [--record REQUESTS.jsonl]
                                  [--record-arrivals] [--loop] [--strict-tool-order] [--nodelay]
                                  [--verbose]
  Binds 127.0.0.1:PORT (0 = a free port), prints exactly one line "PORT <n>" to stdout, then logs
  only to stderr. Exits on SIGTERM/SIGINT, and when stdin reaches EOF (give it a pipe; if stdin is
  /dev/null or a regular file it is not watched). --record appends one JSON line per request:
  {"n", "path", "headers" (lowercased), "body" (JSON or null), "violation" (str or null),
   "entry" (script index used or null), "exhausted" (bool)}; with --record-arrivals, no
  "headers" and no "body" (benchmarks: writing each body out costs the server time in proportion
  to the body, which would be charged to the client that sent the larger one).
  --loop cycles the script forever.
  --strict-tool-order: tool results must come right after their tool calls (the real APIs' rule).
Endpoints: POST /v1/chat/completions and /chat/completions (OpenAI), POST /v1/messages (Anthropic);
  "stream": true gives SSE (chunked), otherwise JSON with Content-Length. HTTP/1.1 keep-alive.
SCRIPT.json: a JSON array of reply entries, consumed in order by accepted requests on any endpoint.
  Requests of troupe's session namer (their body holds "Title this coding session") take no entry:
  they get --naming-reply after --naming-latency-ms, and are recorded with "naming": true.
  Requests rejected by validation (bad JSON, unanswered tool call, missing Anthropic auth headers,
  unknown path) get a 4xx and do NOT consume an entry. Exhausted script -> HTTP 500.
  Reply keys (all optional): "text"; "tool_calls": [{"name", "input", "id"?, "raw_arguments"?}]
  ("raw_arguments": the argument text sent as-is, e.g. JSON cut off by "stop_reason": "max_tokens");
  "stop_reason": "end_turn"|"tool_use"|"max_tokens" (default tool_use if tool calls, else end_turn);
  "usage": {"input_tokens":10, "output_tokens":5, "cache_read_tokens":0, "cache_write_tokens":0}
  (Anthropic meaning; OpenAI prompt_tokens = input + cache_read + cache_write, cached = cache_read).
  Fault keys: "latency_ms" (before headers), "chunk_delay_ms" (between SSE events), "status" with
  optional "headers" and "error_message", "prompt_too_long", "cut_after_events": N (stream: N events
  then close; non-stream: half the body then close), "malformed_sse", "unknown_event",
  "invalid_utf8" (bytes FF FE inside one text piece), "no_stop", "html" (text/html body, status 200
  unless "status" given), "endless" (a delta every 100 ms or chunk_delay_ms until the client goes),
  "silent_after_headers" (with "status": the error's body, then silence; "flood" with "status":
  the error's body, then spaces without end), "stream_error" (provider's in-stream error event instead of the ending),
  "linger_ms" (stream: the closing event, then this long before the body's end, the connection kept).
Hostile keys: "flood" (with "endless": as fast as the socket takes it, 64 KiB per write; without
  "stream", an endless JSON body of spaces), "huge_line": N (the reply's text is one piece of N
  bytes, so one SSE line of N+ bytes, or a JSON body of N+ bytes, written 1 MiB at a time),
  "drip": true (headers and the first event at once, then the rest of the stream one byte per
  "drip_interval_ms", default 1000), "reset_after_events": N (stream: N events, then a TCP reset
  instead of a close). Header values in "headers" are sent verbatim (e.g. "retry-after": "inf").
"""

from __future__ import annotations

import argparse
import asyncio
import email.utils
import json
import os
import random
import signal
import socket
import stat
import struct
import sys
import threading
import time
import traceback
from http import HTTPStatus

VERBOSE = False
# --nodelay: each SSE frame leaves at once (TCP_NODELAY), as from the real APIs' servers, for
# benchmarks; off by default, where frames may coalesce as the tests have always seen them.
NODELAY = False
# What marks a request of troupe's session namer (actors/namer.cpp), and how it is answered.
NAMING_MARKER = b"Title this coding session"
NAMING_REPLY = "Fake Session Title"
NAMING_LATENCY_MS = 0


def log(msg: str) -> None:
    try:
        print(f"[fake_model_server] {msg}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass


def vlog(msg: str) -> None:
    if VERBOSE:
        log(msg)


# Marker placed inside one text piece when "invalid_utf8" is set; replaced by raw bytes FF FE
# after JSON encoding (JSON encoders cannot produce invalid UTF-8 themselves).
BAD_UTF8_MARK = "\u2063FAKE-INVALID-UTF8\u2063"
BAD_UTF8_MARK_BYTES = BAD_UTF8_MARK.encode("utf-8")
# Marker standing for the N filler bytes of "huge_line": the frame or body holding it is written
# in three parts, the filler in blocks, so the server never holds N bytes at once.
HUGE_MARK = "\u2063FAKE-HUGE-LINE\u2063"
HUGE_MARK_BYTES = HUGE_MARK.encode("utf-8")


def encode_json(obj, bad_utf8: bool = False) -> bytes:
    data = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if bad_utf8:
        data = data.replace(BAD_UTF8_MARK_BYTES, b"\xff\xfe")
    return data


# =============================================================================================
# Server state: script cursor, request counter, record file, live connections
# =============================================================================================

class State:
    def __init__(self, script: list, loop_script: bool, record_path: str | None,
                 strict_tool_order: bool, record_bodies: bool = True):
        self.script = script
        self.record_bodies = record_bodies
        self.loop_script = loop_script
        self.strict_tool_order = strict_tool_order
        self.cursor = 0        # script entries consumed so far
        self.requests = 0      # requests received so far
        self.record = open(record_path, "a", encoding="utf-8") if record_path else None
        self.tasks: set[asyncio.Task] = set()

    def next_request_index(self) -> int:
        n = self.requests
        self.requests += 1
        return n

    def take_entry(self) -> tuple[int | None, dict | None]:
        if not self.script:
            return None, None
        if self.loop_script:
            i = self.cursor % len(self.script)
        elif self.cursor >= len(self.script):
            return None, None
        else:
            i = self.cursor
        self.cursor += 1
        return i, self.script[i]

    def write_record(self, rec: dict) -> None:
        if self.record is None:
            return
        self.record.write(json.dumps(rec, ensure_ascii=True) + "\n")
        self.record.flush()

    def close(self) -> None:
        if self.record is not None:
            self.record.close()
            self.record = None


STATE: State  # set in main()


# =============================================================================================
# HTTP layer: request parsing, response writing, keep-alive connection loop
# =============================================================================================

class BadRequest(Exception):
    pass


class Request:
    def __init__(self, method: str, target: str, version: str, headers: dict, body: bytes):
        self.method = method
        self.target = target
        self.path, _, self.query = target.partition("?")
        self.version = version
        self.headers = headers
        self.body = body
        # When the whole request was read: the record's received_at, taken before the body is
        # parsed and checked, so that a big request (a cold server validating a client's tool
        # schemas) is not counted as the client's time.
        self.arrived_at = time.time()

    def keep_alive(self) -> bool:
        conn = self.headers.get("connection", "").lower()
        if self.version == "HTTP/1.0":
            return "keep-alive" in conn
        return "close" not in conn


async def read_request(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Request | None:
    """Reads one request; returns None on a clean EOF between requests."""
    while True:
        line = await reader.readline()
        if not line:
            return None
        if line.strip():
            break  # tolerate stray CRLFs between requests
    parts = line.decode("latin-1").rstrip("\r\n").split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest(f"bad request line {line[:80]!r}")
    method, target, version = parts
    headers: dict[str, str] = {}
    while True:
        h = await reader.readline()
        if not h:
            raise asyncio.IncompleteReadError(b"", None)
        if h in (b"\r\n", b"\n"):
            break
        name, sep, value = h.decode("latin-1").partition(":")
        if not sep:
            raise BadRequest(f"bad header line {h[:80]!r}")
        name, value = name.strip().lower(), value.strip()
        headers[name] = f"{headers[name]}, {value}" if name in headers else value
    if headers.get("expect", "").lower() == "100-continue":
        writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        await writer.drain()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        body = bytearray()
        while True:
            size_line = await reader.readline()
            size = int(size_line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                    pass  # trailers
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return Request(method, target, version, headers, bytes(body))
    length = int(headers.get("content-length", "0") or "0")
    body = await reader.readexactly(length) if length > 0 else b""
    return Request(method, target, version, headers, body)


REASONS = {529: "Overloaded"}


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return REASONS.get(status, "Unknown")


class Conn:
    """Response side of one connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.reader = reader
        self.writer = writer

    async def head(self, status: int, headers: list[tuple[str, str]]) -> None:
        lines = [f"HTTP/1.1 {status} {reason(status)}",
                 f"Date: {email.utils.formatdate(usegmt=True)}",
                 "Server: troupe-fake-model-server"]
        lines += [f"{k}: {v}" for k, v in headers]
        self.writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
        await self.writer.drain()

    async def full(self, status: int, content_type: str, body: bytes,
                   headers: list[tuple[str, str]], keep_alive: bool) -> None:
        hs = [("Content-Type", content_type), ("Content-Length", str(len(body))),
              ("Connection", "keep-alive" if keep_alive else "close")] + headers
        await self.head(status, hs)
        self.writer.write(body)
        await self.writer.drain()

    async def chunk(self, data: bytes) -> None:
        self.writer.write(b"%x\r\n%b\r\n" % (len(data), data))
        await self.writer.drain()

    async def write_huge(self, data: bytes, size: int, chunked: bool) -> None:
        """Writes data with HUGE_MARK replaced by `size` filler bytes, 1 MiB at a time."""
        before, _, after = data.partition(HUGE_MARK_BYTES)
        block = b"a" * (1 << 20)
        send = self.chunk if chunked else self.raw
        await send(before)
        left = size
        while left > 0:
            await send(block[:min(left, len(block))])
            left -= len(block)
        await send(after)

    async def raw(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def reset(self) -> None:
        """Closes the connection with a TCP reset (SO_LINGER 0) instead of a FIN."""
        # abort() drops what the transport still buffers: let it reach the socket first (on
        # loopback the peer then has it, whatever the reset does to our side).
        while self.writer.transport.get_write_buffer_size() > 0:
            await asyncio.sleep(0.001)
        sock = self.writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.writer.transport.abort()

    async def end_chunks(self) -> None:
        self.writer.write(b"0\r\n\r\n")
        await self.writer.drain()

    async def wait_client_close(self) -> None:
        while await self.reader.read(65536):
            pass


async def handle_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    task = asyncio.current_task()
    STATE.tasks.add(task)
    if NODELAY and (sock := writer.get_extra_info("socket")) is not None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    conn = Conn(reader, writer)
    try:
        while True:
            try:
                req = await read_request(reader, writer)
            except BadRequest as e:
                vlog(str(e))
                await conn.full(400, "application/json",
                                encode_json({"error": {"message": str(e), "type": "invalid_request_error"}}),
                                [], keep_alive=False)
                break
            if req is None:
                break
            if not await dispatch(req, conn):
                break
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, ValueError):
        pass  # client went away or sent garbage: drop silently
    except asyncio.CancelledError:
        pass  # server shutdown
    except Exception:
        log("internal error:\n" + traceback.format_exc())
    finally:
        STATE.tasks.discard(task)
        try:
            writer.close()
        except Exception:
            pass


# =============================================================================================
# Reply model: one script entry, normalised
# =============================================================================================

class Reply:
    def __init__(self, entry: dict, n: int):
        self.entry = entry
        self.n = n
        self.rng = random.Random(n)
        self.bad_utf8 = bool(entry.get("invalid_utf8"))
        text = entry.get("text")
        text = "" if text is None else str(text)
        self.text_pieces = self.split(text)
        if self.bad_utf8:
            if self.text_pieces:
                p = self.text_pieces[0]
                self.text_pieces[0] = p[:1] + BAD_UTF8_MARK + p[1:]
            else:
                self.text_pieces = [BAD_UTF8_MARK]
        if entry.get("huge_line"):
            self.text_pieces = [HUGE_MARK]
        self.text = "".join(self.text_pieces)
        self.tool_calls = []
        for i, tc in enumerate(entry.get("tool_calls") or []):
            tc = tc if isinstance(tc, dict) else {}
            self.tool_calls.append({"name": str(tc.get("name", "tool")),
                                    "input": tc.get("input", {}),
                                    "raw_arguments": tc.get("raw_arguments"),
                                    "id": tc.get("id"), "index": i})
        self.stop_reason = entry.get("stop_reason") or ("tool_use" if self.tool_calls else "end_turn")
        u = entry.get("usage") or {}
        self.input_tokens = int(u.get("input_tokens", 10))
        self.output_tokens = int(u.get("output_tokens", 5))
        self.cache_read = int(u.get("cache_read_tokens", 0))
        self.cache_write = int(u.get("cache_write_tokens", 0))

    def split(self, s: str) -> list[str]:
        """Splits s into pieces of 3-8 characters (deterministic per request)."""
        out, i = [], 0
        while i < len(s):
            k = self.rng.randint(3, 8)
            out.append(s[i:i + k])
            i += k
        return out

    def tool_id(self, tc: dict, prefix: str) -> str:
        return str(tc["id"]) if tc["id"] else f"{prefix}fake{self.n}x{tc['index']}"

    @staticmethod
    def args_json(tc: dict) -> str:
        if tc.get("raw_arguments") is not None:  # e.g. JSON cut off at max_tokens
            return str(tc["raw_arguments"])
        return json.dumps(tc["input"], ensure_ascii=False, separators=(",", ":"))


# =============================================================================================
# OpenAI Chat Completions encoder
# =============================================================================================

OPENAI_FINISH = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length",
                 "stop_sequence": "stop"}


class OpenAIEncoder:
    provider = "openai"

    def __init__(self, reply: Reply, req_body: dict):
        self.r = reply
        self.model = req_body.get("model") or "fake-model"
        self.id = f"chatcmpl-fake{reply.n}"
        self.created = int(time.time())
        opts = req_body.get("stream_options")
        # The real API puts "usage": null on every chunk but the last when include_usage is set.
        self.usage_null = isinstance(opts, dict) and bool(opts.get("include_usage"))

    def finish_reason(self) -> str:
        return OPENAI_FINISH.get(self.r.stop_reason, self.r.stop_reason)

    def usage(self) -> dict:
        r = self.r
        prompt = r.input_tokens + r.cache_read + r.cache_write
        return {"prompt_tokens": prompt, "completion_tokens": r.output_tokens,
                "total_tokens": prompt + r.output_tokens,
                "prompt_tokens_details": {"cached_tokens": r.cache_read},
                "completion_tokens_details": {"reasoning_tokens": 0}}

    # ---- non-streaming
    def body(self) -> bytes:
        r = self.r
        msg = {"role": "assistant",
               "content": r.text if r.text else (None if r.tool_calls else ""),
               "refusal": None}
        if r.tool_calls:
            msg["tool_calls"] = [{"id": r.tool_id(tc, "call_"), "type": "function",
                                  "function": {"name": tc["name"], "arguments": r.args_json(tc)}}
                                 for tc in r.tool_calls]
        return encode_json({"id": self.id, "object": "chat.completion", "created": self.created,
                            "model": self.model,
                            "choices": [{"index": 0, "message": msg, "logprobs": None,
                                         "finish_reason": self.finish_reason()}],
                            "usage": self.usage(), "system_fingerprint": None}, r.bad_utf8)

    # ---- streaming
    def frame(self, obj) -> bytes:
        return b"data: " + encode_json(obj, self.r.bad_utf8) + b"\n\n"

    def chunk(self, delta: dict | None, finish: str | None = None, **extra) -> bytes:
        obj = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
               "model": self.model, "system_fingerprint": None,
               "choices": [{"index": 0, "delta": delta or {}, "logprobs": None,
                            "finish_reason": finish}]}
        if self.usage_null:
            obj["usage"] = None
        obj.update(extra)
        return self.frame(obj)

    def stream(self) -> tuple[list[bytes], list[bytes]]:
        """Returns (body frames, ending frames) of a normal stream."""
        r = self.r
        body = [self.chunk({"role": "assistant", "content": "", "refusal": None})]
        body += [self.chunk({"content": p}) for p in r.text_pieces]
        for tc in r.tool_calls:
            i = tc["index"]
            body.append(self.chunk({"tool_calls": [{"index": i, "id": r.tool_id(tc, "call_"),
                                                    "type": "function",
                                                    "function": {"name": tc["name"], "arguments": ""}}]}))
            body += [self.chunk({"tool_calls": [{"index": i, "function": {"arguments": p}}]})
                     for p in r.split(r.args_json(tc))]
        usage = {"id": self.id, "object": "chat.completion.chunk", "created": self.created,
                 "model": self.model, "system_fingerprint": None, "choices": [],
                 "usage": self.usage()}
        ending = [self.chunk({}, self.finish_reason()), self.frame(usage), b"data: [DONE]\n\n"]
        return body, ending

    def unknown_frame(self) -> bytes:
        return self.frame({"id": self.id, "object": "chat.completion.mystery", "created": self.created,
                           "model": self.model, "choices": [],
                           "mystery_field": {"note": "clients must ignore unknown objects"}})

    def unknown_field_chunk(self) -> bytes:
        return self.chunk({"content": ""}, mystery_field={"nested": [1, 2, 3]})

    def error_frame(self) -> bytes:
        return self.frame({"error": {"message": "The server had an error while processing your request.",
                                     "type": "server_error", "param": None, "code": None}})

    def endless_start(self) -> list[bytes]:
        return [self.chunk({"role": "assistant", "content": ""})]

    def endless_tick(self) -> bytes:
        return self.chunk({"content": "tick "})


# =============================================================================================
# Anthropic Messages encoder
# =============================================================================================

class AnthropicEncoder:
    provider = "anthropic"

    def __init__(self, reply: Reply, req_body: dict):
        self.r = reply
        self.model = req_body.get("model") or "fake-model"
        self.id = f"msg_fake{reply.n}"

    def usage(self, output_tokens: int) -> dict:
        r = self.r
        return {"input_tokens": r.input_tokens, "cache_creation_input_tokens": r.cache_write,
                "cache_read_input_tokens": r.cache_read, "output_tokens": output_tokens}

    def message(self, content: list, stop_reason, output_tokens: int) -> dict:
        return {"id": self.id, "type": "message", "role": "assistant", "model": self.model,
                "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                "usage": self.usage(output_tokens)}

    # ---- non-streaming
    def body(self) -> bytes:
        r = self.r
        content = [{"type": "text", "text": r.text}] if r.text else []
        content += [{"type": "tool_use", "id": r.tool_id(tc, "toolu_"), "name": tc["name"],
                     "input": tc["input"]} for tc in r.tool_calls]
        return encode_json(self.message(content, r.stop_reason, r.output_tokens), r.bad_utf8)

    # ---- streaming
    def event(self, name: str, obj: dict) -> bytes:
        return f"event: {name}\ndata: ".encode() + encode_json(obj, self.r.bad_utf8) + b"\n\n"

    def ping(self) -> bytes:
        return self.event("ping", {"type": "ping"})

    def stream(self) -> tuple[list[bytes], list[bytes]]:
        """Returns (body frames, ending frames); the ending starts with the last content_block_stop."""
        r = self.r
        # Like the real API, message_start reports a small provisional output_tokens.
        frames = [self.event("message_start", {"type": "message_start",
                                               "message": self.message([], None, 1)})]
        stops: list[int] = []  # positions of content_block_stop frames
        blocks: list[tuple[dict, list[dict]]] = []
        if r.text_pieces:
            blocks.append(({"type": "text", "text": ""},
                           [{"type": "text_delta", "text": p} for p in r.text_pieces]))
        for tc in r.tool_calls:
            deltas = [{"type": "input_json_delta", "partial_json": ""}]
            deltas += [{"type": "input_json_delta", "partial_json": p} for p in r.split(r.args_json(tc))]
            blocks.append(({"type": "tool_use", "id": r.tool_id(tc, "toolu_"), "name": tc["name"],
                            "input": {}}, deltas))
        for index, (start, deltas) in enumerate(blocks):
            frames.append(self.event("content_block_start", {"type": "content_block_start",
                                                             "index": index, "content_block": start}))
            if index == 0:
                frames.append(self.ping())
            frames += [self.event("content_block_delta", {"type": "content_block_delta",
                                                          "index": index, "delta": d}) for d in deltas]
            stops.append(len(frames))
            frames.append(self.event("content_block_stop", {"type": "content_block_stop", "index": index}))
        if not blocks:
            frames.append(self.ping())
        ending = [
            self.event("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": r.stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": r.output_tokens}}),
            self.event("message_stop", {"type": "message_stop"}),
        ]
        if stops:
            last = stops[-1]
            return frames[:last], frames[last:] + ending
        return frames, ending

    def unknown_frame(self) -> bytes:
        return self.event("mystery_event", {"type": "mystery_event",
                                            "mystery": {"note": "clients must ignore unknown events"}})

    def unknown_field_chunk(self) -> bytes | None:
        return None

    def error_frame(self) -> bytes:
        return self.event("error", {"type": "error",
                                    "error": {"type": "overloaded_error", "message": "Overloaded"}})

    def endless_start(self) -> list[bytes]:
        return [self.event("message_start", {"type": "message_start",
                                             "message": self.message([], None, 1)}),
                self.event("content_block_start", {"type": "content_block_start", "index": 0,
                                                   "content_block": {"type": "text", "text": ""}}),
                self.ping()]

    def endless_tick(self) -> bytes:
        return self.event("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                  "delta": {"type": "text_delta", "text": "tick "}})


# =============================================================================================
# Provider error shapes
# =============================================================================================

OPENAI_ERRORS = {  # status -> (type, code, default message)
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found", "The model does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", "service_unavailable", "The server is overloaded or not ready yet."),
    529: ("server_error", None, "The server is overloaded."),
}
ANTHROPIC_ERRORS = {  # status -> (type, default message)
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "The requested resource could not be found."),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit."),
    500: ("api_error", "Internal server error"),
    503: ("api_error", "Service unavailable"),
    529: ("overloaded_error", "Overloaded"),
}


def error_body(provider: str, status: int, message: str | None = None,
               etype: str | None = None, code: str | None = None) -> bytes:
    if provider == "anthropic":
        t, m = ANTHROPIC_ERRORS.get(status, ("api_error" if status >= 500 else "invalid_request_error",
                                             "Error"))
        return encode_json({"type": "error", "error": {"type": etype or t, "message": message or m}})
    t, c, m = OPENAI_ERRORS.get(status, ("server_error" if status >= 500 else "invalid_request_error",
                                         None, "Error"))
    return encode_json({"error": {"message": message or m, "type": etype or t, "param": None,
                                  "code": code if code is not None else c}})


def prompt_too_long_body(provider: str) -> bytes:
    if provider == "anthropic":
        return error_body(provider, 400, "prompt is too long: 210000 tokens > 200000 maximum",
                          "invalid_request_error")
    return error_body(provider, 400,
                      "This model's maximum context length is 8192 tokens. However, your messages "
                      "resulted in 9000 tokens. Please reduce the length of the messages.",
                      "invalid_request_error", "context_length_exceeded")


# =============================================================================================
# Validation: request shape and the tool call / tool result invariant
# =============================================================================================

def validate_openai(body, strict: bool) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "missing required parameter: 'model'"
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "'messages' must be a non-empty array"
    pending: dict[str, int] = {}  # unanswered tool_call id -> message index
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            return f"messages[{i}] must be an object"
        role = m.get("role")
        if role == "tool":
            tid = m.get("tool_call_id")
            if tid not in pending:
                return (f"messages[{i}]: message with role 'tool' (tool_call_id {tid!r}) is not a "
                        f"response to a preceding message with 'tool_calls'")
            del pending[tid]
            continue
        if strict and pending:
            return (f"An assistant message with 'tool_calls' must be followed by tool messages "
                    f"responding to each 'tool_call_id'. The following tool_call_ids did not have "
                    f"response messages: {', '.join(pending)}")
        if role == "assistant":
            calls = m.get("tool_calls") or []
            if not isinstance(calls, list):
                return f"messages[{i}].tool_calls must be an array"
            for tc in calls:
                tid = tc.get("id") if isinstance(tc, dict) else None
                if not isinstance(tid, str) or not tid:
                    return f"messages[{i}].tool_calls: tool call without an id"
                pending[tid] = i
    if pending:
        tid, i = next(iter(pending.items()))
        return (f"tool call {tid} (messages[{i}]) has no matching tool result "
                f"(unanswered tool_call_ids: {', '.join(pending)})")
    return None


def validate_anthropic(body, strict: bool) -> str | None:
    if not isinstance(body, dict):
        return "request body must be a JSON object"
    if not isinstance(body.get("model"), str):
        return "model: Field required"
    if not isinstance(body.get("max_tokens"), int) or isinstance(body.get("max_tokens"), bool):
        return "max_tokens: Field required"
    msgs = body.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "messages: at least one message is required"
    pending: dict[str, int] = {}  # unanswered tool_use id -> message index
    for i, m in enumerate(msgs):
        if not isinstance(m, dict):
            return f"messages.{i}: must be an object"
        role = m.get("role")
        if role not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant' (got {role!r})"
        content = m.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if role == "user":
            for b in blocks:
                if b.get("type") == "tool_result":
                    tid = b.get("tool_use_id")
                    if tid not in pending:
                        return (f"messages.{i}.content: unexpected `tool_use_id` found in "
                                f"`tool_result` blocks: {tid}. Each `tool_result` block must have a "
                                f"corresponding `tool_use` block in the previous message.")
                    del pending[tid]
            if strict and pending:
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(pending)}. Each `tool_use` block must have a "
                        f"corresponding `tool_result` block in the next message.")
        else:
            if strict and pending:
                return (f"messages.{i}: `tool_use` ids were found without `tool_result` blocks "
                        f"immediately after: {', '.join(pending)}.")
            for b in blocks:
                if b.get("type") == "tool_use":
                    tid = b.get("id")
                    if not isinstance(tid, str) or not tid:
                        return f"messages.{i}.content: tool_use block without an id"
                    pending[tid] = i
    if pending:
        tid, i = next(iter(pending.items()))
        return (f"tool_use {tid} (messages.{i}) has no matching tool_result "
                f"(unanswered tool_use ids: {', '.join(pending)})")
    return None


# =============================================================================================
# Dispatch: route, validate, record, pick the script entry, answer (with faults)
# =============================================================================================

ROUTES = {"/v1/chat/completions": "openai", "/chat/completions": "openai", "/v1/messages": "anthropic"}


async def dispatch(req: Request, conn: Conn) -> bool:
    """Answers one request; returns whether the connection may be reused."""
    keep = req.keep_alive()
    n = STATE.next_request_index()
    provider = ROUTES.get(req.path) if req.method == "POST" else None
    body, parse_error = None, None
    try:
        body = json.loads(req.body)
    except (ValueError, RecursionError) as e:
        parse_error = f"request body is not valid JSON: {e}"

    status, violation, etype = 0, None, None
    if provider is None:
        status, violation = 404, f"unknown endpoint: {req.method} {req.path}"
    elif provider == "anthropic" and ("x-api-key" not in req.headers
                                      or "anthropic-version" not in req.headers):
        missing = [h for h in ("x-api-key", "anthropic-version") if h not in req.headers]
        status, violation, etype = 401, f"missing required header(s): {', '.join(missing)}", "authentication_error"
    elif parse_error:
        status, violation = 400, parse_error
    else:
        check = validate_anthropic if provider == "anthropic" else validate_openai
        violation = check(body, STATE.strict_tool_order)
        status = 400 if violation else 0

    # troupe's session namer asks for a title on the side, at a time of its own: it is answered
    # without taking an entry, so it cannot steal the reply a step is waiting for.
    naming = violation is None and NAMING_MARKER in req.body
    if naming:
        entry_index, entry = None, {"text": NAMING_REPLY, "latency_ms": NAMING_LATENCY_MS}
    else:
        entry_index, entry = (None, None) if violation else STATE.take_entry()
    exhausted = violation is None and entry is None
    exhausted = exhausted and not naming
    rec = {"n": n, "path": req.path, "violation": violation, "entry": entry_index,
           "exhausted": exhausted, "naming": naming, "received_at": req.arrived_at}
    if STATE.record_bodies:
        rec.update(headers=req.headers, body=body)
    if req.query:
        rec["query"] = req.query
    STATE.write_record(rec)

    if violation:
        log(f"request {n} {req.method} {req.path}: VIOLATION: {violation}")
        await conn.full(status, "application/json",
                        error_body(provider or "openai", status, violation, etype),
                        [], keep)
        return keep
    if exhausted:
        msg = (f"fake_model_server: script exhausted ({len(STATE.script)} entries consumed); "
               f"request n={n} has no scripted reply")
        log(f"request {n} {req.path}: script exhausted")
        await conn.full(500, "application/json", error_body(provider, 500, msg, "fake_script_exhausted"),
                        [], keep)
        return keep

    stream = isinstance(body, dict) and body.get("stream") is True
    vlog(f"request {n} {req.path} stream={stream} -> entry {entry_index}")
    if not isinstance(entry, dict):
        entry = {"text": str(entry)}
    return await respond(req, conn, provider, n, body, entry, stream, keep)


async def respond(req: Request, conn: Conn, provider: str, n: int, body: dict, entry: dict,
                  stream: bool, keep: bool) -> bool:
    extra = [(str(k), str(v)) for k, v in (entry.get("headers") or {}).items()]
    extra.append(("request-id" if provider == "anthropic" else "x-request-id", f"req_fake{n}"))
    if entry.get("latency_ms"):
        await asyncio.sleep(float(entry["latency_ms"]) / 1000)

    # ---- faults answered without a model reply
    if entry.get("html"):
        html = (b"<!DOCTYPE html>\n<html><head><title>Gateway</title></head><body>"
                b"<h1>Oops</h1><p>This is not the API you are looking for.</p></body></html>\n")
        await conn.full(int(entry.get("status", 200)), "text/html; charset=utf-8", html, extra, keep)
        return keep
    if entry.get("prompt_too_long"):
        await conn.full(400, "application/json", prompt_too_long_body(provider), extra, keep)
        return keep
    status = int(entry.get("status", 200))
    if status != 200:
        error = error_body(provider, status, entry.get("error_message"))
        if entry.get("silent_after_headers"):  # the error's body promised whole, never ended
            await conn.head(status, [("Content-Type", "application/json"),
                                     ("Content-Length", str(len(error) + 256))] + extra)
            await conn.raw(error)
            await conn.wait_client_close()
            return False
        if entry.get("flood"):  # the error, then spaces without end until the client goes
            await conn.head(status, [("Content-Type", "application/json"),
                                     ("Transfer-Encoding", "chunked")] + extra)
            await conn.chunk(error)
            spaces = b" " * 65536
            try:
                while not conn.reader.at_eof():
                    await conn.chunk(spaces)
            except (ConnectionError, OSError):
                pass
            return False
        await conn.full(status, "application/json", error, extra, keep)
        return keep

    reply = Reply(entry, n)
    enc = AnthropicEncoder(reply, body) if provider == "anthropic" else OpenAIEncoder(reply, body)
    delay = float(entry.get("chunk_delay_ms", 0)) / 1000
    sse_headers = [("Content-Type", "text/event-stream; charset=utf-8"), ("Cache-Control", "no-cache"),
                   ("Transfer-Encoding", "chunked"), ("Connection", "keep-alive" if keep else "close")]

    if entry.get("silent_after_headers"):
        if stream:
            await conn.head(200, sse_headers + extra)
        else:  # promise a body, never send it
            await conn.head(200, [("Content-Type", "application/json"), ("Content-Length", "256")] + extra)
        await conn.wait_client_close()
        return False

    if entry.get("endless"):
        tick = delay or 0.1
        flood = bool(entry.get("flood"))
        if stream:
            await conn.head(200, sse_headers + extra)
            for f in enc.endless_start():
                await conn.chunk(f)
            piece = enc.endless_tick()
            if flood:
                piece = piece * max(1, 65536 // len(piece))
            while not conn.reader.at_eof():
                if not flood:
                    await asyncio.sleep(tick)
                await conn.chunk(piece)
        else:  # chunked JSON body that never gets past its leading whitespace
            await conn.head(200, [("Content-Type", "application/json"),
                                  ("Transfer-Encoding", "chunked")] + extra)
            piece = b" " * (65536 if flood else 1)
            while not conn.reader.at_eof():
                await conn.chunk(piece)
                if not flood:
                    await asyncio.sleep(tick)
        return False

    huge = int(entry.get("huge_line") or 0)

    cut = entry.get("cut_after_events")
    if not stream:
        data = enc.body()
        if huge:
            length = len(data) - len(HUGE_MARK_BYTES) + huge
            await conn.head(200, [("Content-Type", "application/json"),
                                  ("Content-Length", str(length))] + extra)
            await conn.write_huge(data, huge, chunked=False)
            return keep
        if cut is not None:
            await conn.head(200, [("Content-Type", "application/json"),
                                  ("Content-Length", str(len(data)))] + extra)
            conn.writer.write(data[:len(data) // 2])
            await conn.writer.drain()
            return False
        await conn.full(200, "application/json", data, extra, keep)
        return keep

    # ---- streaming, with stream faults applied to the frame list
    frames_body, ending = enc.stream()
    if entry.get("unknown_event"):
        odd = [enc.unknown_frame()]
        if enc.unknown_field_chunk() is not None:
            odd.append(enc.unknown_field_chunk())
        frames_body[1:1] = odd
    if entry.get("malformed_sse"):
        mid = max(1, len(frames_body) // 2)
        frames_body.insert(mid, b"data: {not json\n\n")
    if entry.get("stream_error"):
        ending = [enc.error_frame()]
    elif entry.get("no_stop"):
        ending = []
    frames = frames_body + ending
    reset = entry.get("reset_after_events")
    abrupt = cut is not None or reset is not None
    if abrupt:
        frames = frames[:max(0, int(cut if cut is not None else reset))]

    await conn.head(200, sse_headers + extra)
    if entry.get("drip"):
        interval = float(entry.get("drip_interval_ms", 1000)) / 1000
        await conn.chunk(frames[0])
        for byte in b"".join(frames[1:]):
            await asyncio.sleep(interval)
            await conn.chunk(bytes([byte]))
        await conn.end_chunks()
        return keep
    for i, f in enumerate(frames):
        if i and delay:
            await asyncio.sleep(delay)
        if huge and HUGE_MARK_BYTES in f:
            await conn.write_huge(f, huge, chunked=True)
        else:
            await conn.chunk(f)
    if reset is not None:
        await conn.reset()
        return False
    if abrupt:
        return False  # no terminating chunk: the caller closes the connection
    if entry.get("linger_ms"):
        await asyncio.sleep(float(entry["linger_ms"]) / 1000)
    await conn.end_chunks()
    return keep


# =============================================================================================
# Main: arguments, script loading, listening, shutdown on signal or stdin EOF
# =============================================================================================

def raise_fd_limit() -> None:
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = 65536 if hard == resource.RLIM_INFINITY else min(hard, 65536)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    except (ImportError, ValueError, OSError):
        pass


def watch_stdin(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Stops the server when stdin (a pipe, socket or tty) reaches EOF."""
    try:
        mode = os.fstat(0).st_mode
    except OSError:
        log("stdin is closed; not watching it")
        return
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or os.isatty(0)):
        vlog("stdin is not a pipe or tty; not watching it for EOF")
        return

    def reader():
        try:
            while os.read(0, 4096):  # raw fd read: no buffer lock held at interpreter exit
                pass
        except OSError:
            pass
        vlog("stdin reached EOF; stopping")
        loop.call_soon_threadsafe(stop.set)

    threading.Thread(target=reader, name="stdin-watch", daemon=True).start()


async def serve(args) -> int:
    loop = asyncio.get_running_loop()
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    loop.set_exception_handler(lambda _loop, ctx: vlog(f"asyncio: {ctx.get('message')} {ctx.get('exception')!r}"))
    try:
        server = await asyncio.start_server(handle_connection, host="127.0.0.1", port=args.port,
                                            backlog=4096, limit=1 << 20)
    except OSError as e:
        log(f"cannot listen on 127.0.0.1:{args.port}: {e}")
        return 1
    port = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {port}\n")
    sys.stdout.flush()
    log(f"listening on 127.0.0.1:{port} with {len(STATE.script)} script entries"
        f"{' (looping)' if STATE.loop_script else ''}")
    watch_stdin(loop, stop)
    await stop.wait()
    server.close()
    tasks = list(STATE.tasks)
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    STATE.close()
    log(f"stopped after {STATE.requests} requests")
    return 0


def main() -> int:
    global STATE, VERBOSE, NAMING_REPLY, NAMING_LATENCY_MS, NODELAY
    ap = argparse.ArgumentParser(description="Fake OpenAI/Anthropic model server for tests.")
    ap.add_argument("--script", required=True, help="JSON array of reply entries")
    ap.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0 = any free port)")
    ap.add_argument("--record", help="append one JSON line per request to this file")
    ap.add_argument("--record-arrivals", action="store_true",
                    help="record requests without their headers and bodies")
    ap.add_argument("--loop", action="store_true", help="cycle through the script forever")
    ap.add_argument("--strict-tool-order", action="store_true",
                    help="tool results must immediately follow their tool calls")
    ap.add_argument("--naming-reply", default=NAMING_REPLY,
                    help="the title troupe's session namer gets (its requests take no entry)")
    ap.add_argument("--naming-latency-ms", type=int, default=0,
                    help="delay before the namer's title")
    ap.add_argument("-v", "--verbose", action="store_true", help="log every request to stderr")
    ap.add_argument("--nodelay", action="store_true",
                    help="TCP_NODELAY on every connection (benchmarks: no Nagle delay per frame)")
    args = ap.parse_args()
    VERBOSE = args.verbose
    NODELAY = args.nodelay
    NAMING_REPLY = args.naming_reply
    NAMING_LATENCY_MS = args.naming_latency_ms
    try:
        with open(args.script, encoding="utf-8") as f:
            script = json.load(f)
    except (OSError, ValueError) as e:
        log(f"cannot read script {args.script}: {e}")
        return 2
    if not isinstance(script, list):
        log(f"script {args.script} must be a JSON array")
        return 2
    raise_fd_limit()
    STATE = State(script, args.loop, args.record, args.strict_tool_order,
                  record_bodies=not args.record_arrivals)
    return asyncio.run(serve(args))


if __name__ == "__main__":
    sys.exit(main())
