"""Copy inspect .json logs with the mock model renamed to together/multistat/<name>: the
Every Eval Ever converter accepts only known providers (it refuses mockllm)."""
import json
import sys
from pathlib import Path

for src in sys.argv[2:]:
    log = json.loads(Path(src).read_text())
    name = log["eval"]["model"].split("/", 1)[1]
    log["eval"]["model"] = f"together/multistat/{name}"
    for s in log["samples"]:
        s["output"]["model"] = f"multistat/{name}"
    Path(sys.argv[1], Path(src).name).write_text(json.dumps(log, indent=2))
