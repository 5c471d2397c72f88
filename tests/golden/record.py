"""Record the golden predictions: every configuration of every default sweep (conf/default_sweep/)
and a seeded sample of trials of every shipped Optuna sweep (sweeps/), each predicted through
``dabench.predict``; written to tests/golden/predictions.json.

    .venv/bin/python tests/golden/record.py            # rewrite the file (only on purpose)

tests/golden/test_golden.py predicts the same override lists and compares every status and metric.
A change in a model's numbers is then a visible, reviewed rewrite of the file, never silent.
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).with_name("predictions.json")
TRIALS_PER_SWEEP = 10
SEED = 0

#: which default sweep belongs to which command line (conf/hardware/*.yaml pull them in)
DEFAULT_SWEEPS = {
    "ipu_pp": ["hardware=ipu", "parallel=pp"],
    "rdu_none": ["hardware=rdu"],
    "wse2_none": ["hardware=wse2"],
}


def _split(text: str) -> list[str]:
    """Hydra's comma list (quoted items keep their commas and spaces)."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    override = OverridesParser.create().parse_override(f"k={text}")
    if override.is_sweep_override():
        return list(override.sweep_string_iterator())
    return [override.get_value_element_as_str()]


def default_sweep_cases() -> list[dict]:
    cases = []
    for name, base in DEFAULT_SWEEPS.items():
        params = yaml.safe_load((ROOT / "conf" / "default_sweep" / f"{name}.yaml").read_text())["hydra"]["sweeper"][
            "params"
        ]
        keys = list(params)
        values = [_split(str(params[k]).strip()) for k in keys]
        for combo in itertools.product(*values):
            cases.append(
                {
                    "source": f"default_sweep/{name}",
                    "overrides": base + [f"{k}={v}" for k, v in zip(keys, combo, strict=False)],
                }
            )
    return cases


def optuna_sweep_cases() -> list[dict]:
    import optuna

    from dabench.config.compose import compose
    from dabench.tune.driver import TrialSpace
    from dabench.tune.space import params_to_overrides, parse_overrides
    from dabench.tune.structured import load_space

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    cases = []
    for path in sorted((ROOT / "sweeps").glob("*.yaml")):
        sweeper = yaml.safe_load(path.read_text())["hydra"]["sweeper"]
        base = [f"+sweeps={path.stem}"]
        config = compose(base)
        space = sweeper.get("space") or {}
        structured = load_space(space["hook"], config, space.get("args")) if space.get("hook") else None
        trial_space = TrialSpace(
            parsed=parse_overrides(params_to_overrides(sweeper.get("params"))), structured=structured
        )
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=SEED))
        for _ in range(TRIALS_PER_SWEEP):
            trial = study.ask()
            overrides = trial_space.overrides(trial_space.suggest(trial))
            study.tell(trial, 0.0)
            cases.append({"source": f"sweeps/{path.stem}", "overrides": base + overrides})
    return cases


def _number(value):
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def predict_case(overrides: list[str]) -> dict:
    from dabench import predict

    r = predict(overrides)
    metrics = {k: _number(v) for k, v in sorted(r.metrics.items()) if isinstance(v, (int, float))}
    return {
        "status": r.status.value,
        "mode": r.mode,
        "diagnosis": list(r.diagnosis) if r.diagnosis else None,
        "metrics": metrics,
    }


def main() -> None:
    import os
    import tempfile

    sys.path.insert(0, str(ROOT))
    from tests.conftest import pin_grid_machine, write_test_calibration

    pin_grid_machine()  # CPU bands: the shipped grid's machine, whatever this one is
    # CPU predictions read the calibration cache: use the tests' fixed one, not this machine's
    folder = Path(tempfile.mkdtemp(prefix="dabench-golden-"))
    write_test_calibration(folder, "test fixture (tests/conftest.py), not a measurement")
    os.environ["DABENCH_CACHE_DIR"] = str(folder)
    cases = default_sweep_cases() + optuna_sweep_cases()
    for i, case in enumerate(cases):
        case["result"] = predict_case(case["overrides"])
        print(f"{i + 1}/{len(cases)} {case['source']} {case['result']['status']}", file=sys.stderr)
    OUT.write_text(json.dumps(cases, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main()
