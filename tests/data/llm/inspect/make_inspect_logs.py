"""Produce the inspect_ai fixture logs: two mock "models", an inline dataset, two scorers
(match, includes), epochs=2, sample metadata with a passage group; .eval and .json logs."""
import sys

from inspect_ai import Task, eval
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ModelOutput, ModelUsage, get_model
from inspect_ai.scorer import includes, match
from inspect_ai.solver import generate

QUESTIONS = [  # (id, question, target, passage)
    ("q1", "2 + 2 = ?", "4", "p1"),
    ("q2", "3 + 3 = ?", "6", "p1"),
    ("q3", "Capital of France?", "Paris", "p2"),
    ("q4", "Capital of Italy?", "Rome", "p2"),
    ("q5", "Colour of the sky?", "blue", "p3"),
    ("q6", "Opposite of hot?", "cold", "p3"),
]
# answers per model and per epoch (keyed by the question); wrong or partial on purpose
ANSWERS = {
    "alpha": {"2 + 2 = ?": ["4", "4"], "3 + 3 = ?": ["6", "5"],
              "Capital of France?": ["Paris", "The answer is Paris"],
              "Capital of Italy?": ["Milan", "Rome"], "Colour of the sky?": ["blue", "blue"],
              "Opposite of hot?": ["warm", "cold"]},
    "beta": {"2 + 2 = ?": ["5", "4"], "3 + 3 = ?": ["6", "6"],
             "Capital of France?": ["It is Paris.", "Lyon"],
             "Capital of Italy?": ["Rome", "Rome"], "Colour of the sky?": ["grey", "blue"],
             "Opposite of hot?": ["cold", "cold is the answer"]},
}


def task():
    return Task(
        name="arith_capitals",
        dataset=MemoryDataset([Sample(id=i, input=q, target=t, metadata={"passage": p})
                               for i, q, t, p in QUESTIONS]),
        solver=generate(),
        scorer=[match(), includes()],
        epochs=2,
    )


def outputs(name):
    seen = {}

    def respond(messages, tools, tool_choice, config):
        text = messages[-1].text
        k = seen.get(text, 0)
        seen[text] = k + 1
        out = ModelOutput.from_content(model=f"mockllm/{name}",
                                       content=ANSWERS[name][text][k])
        # fixed token usage: the mock provider would otherwise count tokens with
        # tiktoken, which downloads its encoding (no network here)
        out.usage = ModelUsage(input_tokens=8, output_tokens=2, total_tokens=10)
        return out
    return respond


if __name__ == "__main__":
    out = sys.argv[1]
    for fmt in ("eval", "json"):
        for name in ANSWERS:
            model = get_model(f"mockllm/{name}", custom_outputs=outputs(name))
            eval(task(), model=model, log_dir=f"{out}/{fmt}", log_format=fmt,
                 max_connections=1, max_samples=1, display="none")
