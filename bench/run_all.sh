#!/usr/bin/env bash
# Builds nothing: runs every benchmark against an existing Release build directory (make bench).
# Usage: bench/run_all.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
here=$(cd "$(dirname "$0")" && pwd)

"$build/bench/bench_step_overhead" 1000 3
"$build/bench/bench_step_overhead" 300 3 0 shell
"$build/bench/bench_shell_calls" 500 3
"$build/bench/bench_parallel_tools" 5
"$build/bench/bench_request_preparation" 200 3
"$build/bench/bench_reply_decoding" 20000 5
"$build/bench/bench_notification_delivery" "$build/troupe" 100 1000
python3 "$here/provider_steps.py" "$build/troupe" 50 3 openai
python3 "$here/provider_steps.py" "$build/troupe" 50 3 anthropic
python3 "$here/agent_fanout.py" "$build/troupe" 1000 3 text
python3 "$here/agent_fanout.py" "$build/troupe" 1000 3 shell
# troupe fleet: 10,000 tasks of 5 steps at 100 ms of model latency, all at once; then 1,000
# tasks through one fleet beside 1,000 troupe run processes.
python3 "$here/fleet_scale.py" "$build" 10000 5 100
python3 "$here/fleet_scale.py" "$build" 1000 5 100 --compare 1000

# 1,000 concurrent streams, 200 ms of model latency, through one engine. The load server is
# bench_stream_server (C++, epoll): the Python fixture's own CPU would be what is measured.
coproc server { exec "$build/bench/bench_stream_server" 200; }
server_pid=$server_PID
trap 'kill "$server_pid" 2>/dev/null || true' EXIT
read -r _ port <&"${server[0]}"
ulimit -n 8192
"$build/bench/bench_concurrent_streams" "$port" 1000 3

# An MCP server's cost: a call of server-everything's echo through troupe beyond the server's
# own time, and the time to the first model request with two servers configured vs none
# (needs `make mcp-deps`).
python3 "$here/mcp_calls.py" "$build/troupe" 200 3

# troupe beside the floor (bench/floor_client.py: keep-alive HTTP, SSE, one persistent bash) and curl, in one run, at 0 and 100 ms of model latency.
python3 "$here/side_by_side.py" "$build/troupe" --steps 20 --rounds 5
python3 "$here/side_by_side.py" "$build/troupe" --steps 20 --rounds 3 --latency-ms 100
