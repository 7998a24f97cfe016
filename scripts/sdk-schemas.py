#!/usr/bin/env python3
"""Exports JSON Schemas of the official provider SDKs' request types to
tests/fixtures/sdk-schemas/, for the Rust tests that validate every planner request
(tests/all/llm/wire.rs). CI does not run this: the output is committed.

    python3 -m venv /tmp/sdk && /tmp/sdk/bin/pip install -r scripts/sdk-schemas/requirements.txt
    /tmp/sdk/bin/python scripts/sdk-schemas.py

Each schema is `pydantic.TypeAdapter(T).json_schema()` with `additionalProperties: false`
set on every object that does not already say what extra keys may hold, so a field the
SDK does not declare fails validation. The SDK versions are recorded in each file
(`x-sdk`).
"""

import json
import pathlib
import sys
from importlib.metadata import version

from pydantic import TypeAdapter

import anthropic.types.message_create_params as anthropic_messages
import openai.types.chat.completion_create_params as openai_chat
import openai.types.responses.response_create_params as openai_responses

OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "sdk-schemas"

TYPES = {
    "openai-responses.json": (
        "openai",
        "openai.types.responses.ResponseCreateParamsNonStreaming",
        openai_responses.ResponseCreateParamsNonStreaming,
    ),
    "openai-chat.json": (
        "openai",
        "openai.types.chat.CompletionCreateParamsNonStreaming",
        openai_chat.CompletionCreateParamsNonStreaming,
    ),
    "anthropic-messages.json": (
        "anthropic",
        "anthropic.types.MessageCreateParamsNonStreaming",
        anthropic_messages.MessageCreateParamsNonStreaming,
    ),
}


def close(node):
    """Sets `additionalProperties: false` on every object schema that has none."""
    if isinstance(node, dict):
        is_object = node.get("type") == "object" or "properties" in node
        if is_object and "additionalProperties" not in node and "patternProperties" not in node:
            node["additionalProperties"] = False
        for v in node.values():
            close(v)
    elif isinstance(node, list):
        for v in node:
            close(v)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for file, (package, name, t) in TYPES.items():
        schema = TypeAdapter(t).json_schema()
        close(schema)
        schema["x-sdk"] = {
            "package": package,
            "version": version(package),
            "pydantic": version("pydantic"),
            "type": name,
        }
        (OUT / file).write_text(json.dumps(schema, indent=1, sort_keys=True) + "\n")
        print(f"{file}: {name} from {package} {version(package)}", file=sys.stderr)


if __name__ == "__main__":
    main()
