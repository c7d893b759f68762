"""Qwen3's chat template for ``qwen3-8b-shape``, turn shape by turn shape, against expected strings
written by hand: thinking off and on, the history without its think block, a final assistant turn, a
later system message, tools, tool calls and their results."""

from __future__ import annotations

from tests.harness.conftest import needs_qwen3_tokenizer

pytestmark = needs_qwen3_tokenizer


def render(tokenizer, messages, thinking=False, tools=None, generation=True):
    return tokenizer.apply_chat_template(
        messages, tools=tools, tokenize=False, add_generation_prompt=generation, enable_thinking=thinking
    )


SYS, USER = {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}


def test_system_and_user_with_thinking_off_end_in_an_empty_think_block(qwen3_tokenizer):
    assert render(qwen3_tokenizer, [SYS, USER]) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_thinking_on_leaves_the_generation_prompt_open(qwen3_tokenizer):
    assert (
        render(qwen3_tokenizer, [USER], thinking=True)
        == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    )


def test_history_is_written_back_without_the_think_block(qwen3_tokenizer):
    first = render(qwen3_tokenizer, [USER])
    reply = {"role": "assistant", "content": "<think>\nlet me see\n</think>\n\nHello!"}
    second = render(qwen3_tokenizer, [USER, reply, {"role": "user", "content": "Again"}])
    assert second == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello!<|im_end|>\n"
        "<|im_start|>user\nAgain<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
    assert not second.startswith(first)  # the prompt of turn 2 does not extend the prompt of turn 1
    assert first.startswith(second[: len("<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n")])


def test_a_final_assistant_turn_keeps_its_think_block(qwen3_tokenizer):
    text = render(qwen3_tokenizer, [USER, {"role": "assistant", "content": "Hello!"}], generation=False)
    assert (
        text
        == "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\nHello!<|im_end|>\n"
    )


def test_a_later_system_message_is_its_own_turn(qwen3_tokenizer):
    text = render(qwen3_tokenizer, [USER, {"role": "system", "content": "New rule."}])
    assert text == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>system\nNew rule.<|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


TOOL = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


def test_tools_go_into_the_system_turn(qwen3_tokenizer):
    assert render(qwen3_tokenizer, [SYS, USER], tools=[TOOL]) == (
        "<|im_start|>system\nBe brief.\n\n# Tools\n\n"
        "You may call one or more functions to assist with the user query.\n\n"
        "You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n"
        '{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}'
        "\n</tools>\n\n"
        "For each function call, return a json object with function name and arguments within "
        "<tool_call></tool_call> XML tags:\n<tool_call>\n"
        '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )


def test_tool_calls_and_consecutive_tool_results(qwen3_tokenizer):
    call = {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
        ],
    }
    results = [{"role": "tool", "content": "18 C"}, {"role": "tool", "content": "rain"}]
    assert render(qwen3_tokenizer, [USER, call, *results]) == (
        "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<tool_call>\n"
        '{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>\n'
        "<|im_start|>user\n<tool_response>\n18 C\n</tool_response>\n"
        "<tool_response>\nrain\n</tool_response><|im_end|>\n"
        "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    )
