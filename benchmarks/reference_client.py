"""The reference for ``bench_endpoint.py``: a minimal asyncio client doing the plugin's job by hand.

It reads the same ``cases.jsonl``, renders each case as the plugin does with no template (the
input as one user message), sends it with httpx (one ``AsyncClient``, at most ``concurrency``
calls in flight), or with ``--aiohttp`` with aiohttp (one ``ClientSession``: the floor a Python
client can reach, issue 42), checks every ``must_include`` / ``must_not_include`` substring of the
answer and prints how many passed. No pytest, no cache, no report: what a team would write by hand.

    python benchmarks/reference_client.py CASES.jsonl BASE_URL [--concurrency 32] [--aiohttp]
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx


async def run(cases: list[dict[str, Any]], base_url: str, concurrency: int) -> tuple[int, int]:
    """(passed, failed) over ``cases``."""
    bound = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, limits=limits, timeout=60, trust_env=False) as client:

        async def one(case: dict[str, Any]) -> bool:
            body = {"model": "bench", "messages": [{"role": "user", "content": case["input"]}]}
            async with bound:
                reply = await client.post("/chat/completions", json=body)
            output = reply.json()["choices"][0]["message"]["content"]
            return all(t in output for t in case.get("must_include", [])) and not any(
                t in output for t in case.get("must_not_include", [])
            )

        results = await asyncio.gather(*(one(case) for case in cases))
    passed = sum(results)
    return passed, len(results) - passed


def _passes(case: dict[str, Any], output: str) -> bool:
    return all(t in output for t in case.get("must_include", [])) and not any(
        t in output for t in case.get("must_not_include", [])
    )


async def run_aiohttp(cases: list[dict[str, Any]], base_url: str, concurrency: int) -> tuple[int, int]:
    """(passed, failed) over ``cases``, sent with aiohttp."""
    import aiohttp

    bound = asyncio.Semaphore(concurrency)
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=60)) as session:

        async def one(case: dict[str, Any]) -> bool:
            body = {"model": "bench", "messages": [{"role": "user", "content": case["input"]}]}
            async with bound, session.post(base_url + "/chat/completions", json=body) as reply:
                output = (await reply.json())["choices"][0]["message"]["content"]
            return _passes(case, output)

        results = await asyncio.gather(*(one(case) for case in cases))
    passed = sum(results)
    return passed, len(results) - passed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases")
    parser.add_argument("base_url")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--aiohttp", action="store_true", help="send with aiohttp (the floor), not httpx")
    args = parser.parse_args()
    with open(args.cases, encoding="utf-8") as fp:
        cases = [json.loads(line) for line in fp if line.strip()]
    send = run_aiohttp if args.aiohttp else run
    passed, failed = asyncio.run(send(cases, args.base_url, args.concurrency))
    print(f"{passed} passed, {failed} failed")


if __name__ == "__main__":
    main()
