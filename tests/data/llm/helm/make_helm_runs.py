"""Write two HELM run folders (run_spec.json + per_instance_stats.json) in the format of
helm-run's output (crfm-helm 0.5.x; field layout as in HELM's PerInstanceStats and Stat
dataclasses and the published example runs): two models on one scenario, 6 instances,
2 train trials, statistics with count 0, one perturbed variant."""
import json
import random
import sys
from pathlib import Path

SCENARIO = "mmlu:subject=philosophy,method=multiple_choice_joint"
MODELS = {"openai/gpt2": "openai_gpt2", "eleutherai/pythia-1b-v0": "eleutherai_pythia-1b-v0"}
INSTANCES = ["id11", "id65", "id147", "id200", "id231", "id302"]


def stat(name, values, split="test", perturbation=None):
    out = {"name": {"name": name, "split": split}}
    if perturbation:
        out["name"]["perturbation"] = perturbation
    out["count"] = len(values)
    out["sum"] = sum(values)
    out["sum_squared"] = sum(v * v for v in values)
    if values:
        mean = out["sum"] / len(values)
        var = out["sum_squared"] / len(values) - mean * mean
        out.update(min=min(values), max=max(values), mean=mean, variance=var,
                   stddev=var ** 0.5)
    return out


def main(out):
    rng = random.Random(20261127)
    for model, slug in MODELS.items():
        folder = Path(out) / f"{SCENARIO},model={slug}"
        folder.mkdir(parents=True, exist_ok=True)
        spec = {"name": f"{SCENARIO},model={slug}",
                "scenario_spec": {"class_name":
                                  "helm.benchmark.scenarios.mmlu_scenario.MMLUScenario",
                                  "args": {"subject": "philosophy"}},
                "adapter_spec": {"method": "multiple_choice_joint", "max_train_instances": 5,
                                 "num_train_trials": 2, "num_outputs": 1,
                                 "model_deployment": f"huggingface/{slug}", "model": model,
                                 "temperature": 0.0, "max_tokens": 1},
                "metric_specs": [{"class_name":
                                  "helm.benchmark.metrics.basic_metrics.BasicGenerationMetric",
                                  "args": {"names": ["exact_match", "quasi_exact_match"]}}],
                "groups": ["mmlu"]}
        (folder / "run_spec.json").write_text(json.dumps(spec, indent=2))
        entries = []
        for trial in (0, 1):
            for i, inst in enumerate(INSTANCES):
                split = "valid" if i == 0 else "test"
                em = float(rng.random() < (0.6 if slug == "openai_gpt2" else 0.4))
                runtime = round(rng.uniform(0.2, 0.9), 6)
                stats = [stat("num_prompt_tokens", [300 + 17 * i], split),
                         stat("training_co2_cost", [], split),
                         stat("inference_runtime", [runtime], split),
                         stat("exact_match", [em], split),
                         stat("quasi_exact_match", [em], split)]
                entries.append({"instance_id": inst, "train_trial_index": trial,
                                "stats": stats})
        pert = {"name": "typos", "robustness": True, "fairness": False,
                "computed_on": "perturbed", "prob": 0.1}
        entries.append({"instance_id": "id65", "perturbation": pert, "train_trial_index": 0,
                        "stats": [stat("exact_match", [0.0], "test", pert)]})
        (folder / "per_instance_stats.json").write_text(json.dumps(entries, indent=2))


if __name__ == "__main__":
    main(sys.argv[1])
