"""The seed article's own prompt texts, where the project knows them, to count with a run's tokenizer.

The built-in workloads are the project's own texts modelled on the article's (the conversation's
ten logs, the template questions); these are the article's words as issue #24 quotes them, so a
run can say how many tokens the article's prompt is with its model's tokenizer (env.json,
``tokenizer.seed_template_prompt``), and the report can set that beside the article's figure.
"""

from __future__ import annotations

# The template experiment's first prompt, rendered with thinking off.
TEMPLATE_FIRST_PROMPT = (
    {"role": "system", "content": "Answer with the 3-digit HTTP status code only."},
    {"role": "user", "content": "What is the HTTP status code for Not Found?"},
)
