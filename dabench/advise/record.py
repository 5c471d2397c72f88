"""MLflow record of one advice: a parent run with the whole search as artifacts (``advice/``) and one
child run per platform (its winner, or the status and reason when nothing fits). What each holds:
docs/advise.md, "Where it is recorded".
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

from dabench.advise.answer import search_rows, write_csv
from dabench.advise.run import Advice
from dabench.core.readers import is_number
from dabench.pipeline.record import run_record
from dabench.runtime.sinks import write_text
from dabench.tracking.lifecycle import BatchRecorder, ParentRun, PendingRun, now_ms

ADVISE_TAG = "dabench.advise"
PARENT_TAG = "dabench.advise_parent"
ARTIFACT_DIR = "advice"

_ROW_METRICS = {
    "rank": "advise.rank",
    "time_to_train_s": "advise.time_to_train_s",
    "time_lo_s": "advise.time_to_train_s.lo",
    "time_hi_s": "advise.time_to_train_s.hi",
    "energy_kwh": "advise.energy_kwh",
    "energy_lo_kwh": "advise.energy_kwh.lo",
    "energy_hi_kwh": "advise.energy_kwh.hi",
    "cost": "advise.cost",
    "tokens": "advise.tokens",
    "evaluations": "advise.evaluations",
    "infeasible": "advise.infeasible",
}


def write_files(advice: Advice, ranked: list[dict[str, Any]], folder: Path) -> Path:
    """advice.json (the request, the search's size and time, the ranked rows and every evaluated
    deployment), advice.csv and search.csv into ``folder``."""
    search = search_rows(advice)
    document = {
        "label": "PREDICTED",
        **asdict(advice.request),
        "seconds": advice.seconds,
        "evaluations": advice.evaluations,
        "rows": ranked,
        "search": search,
    }
    write_text("exports", folder / "advice.json", json.dumps(document, indent=1, default=str))
    write_csv(ranked, folder / "advice.csv")
    write_csv(search, folder / "search.csv", list(search[0]) if search else ["platform", "status"])
    return folder


def record(advice: Advice, ranked: list[dict[str, Any]], *, experiment: str = "dabench", uri: str | None = None) -> str:
    """Write the parent and its children; return the parent run id."""

    req = advice.request
    by_platform = {o.platform: o for o in advice.outcomes}
    with ParentRun.start(
        "advise",
        experiment=experiment,
        uri=uri,
        run_name=f"advise {req.model} {req.tokens:.3g} tokens",
        note=f"Advice: python -m dabench advise model={req.model} tokens={req.tokens:.3g}",
        mode="predict",
        tags={
            ADVISE_TAG: "parent",
            "dabench.label": "PREDICTED",
            "dabench.model": req.model,
            "advise.objective": ",".join(req.objectives),
        },
    ) as parent:
        parent.log(
            params={
                "advise.model": req.model,
                "advise.model_overrides": " ".join(req.model_overrides),
                "advise.tokens": req.tokens,
                "advise.platforms": ",".join(req.platforms),
                "advise.max_chips": req.max_chips,
                "advise.objective": ",".join(req.objectives),
                "advise.trials": req.trials,
                "advise.seed": req.seed,
                "advise.price_per_chip_hour": req.price_per_chip_hour,
                "advise.price_per_system_hour": req.price_per_system_hour,
            },
            metrics={
                "advise.evaluations": advice.evaluations,
                "advise.seconds": advice.seconds,
                "advise.platforms_ok": sum(r["status"] == "ok" for r in ranked),
            },
        )
        with tempfile.TemporaryDirectory() as tmp:
            parent.log_artifacts(write_files(advice, ranked, Path(tmp) / ARTIFACT_DIR), ARTIFACT_DIR)
        with BatchRecorder(experiment=experiment, uri=uri, parent_id=parent.run_id) as batch:
            for row in ranked:
                outcome = by_platform[row["platform"]]
                pending = PendingRun(f"advise {req.model} {row['platform']} #{row['rank']}", now_ms())
                result = outcome.result
                if result is not None and row["status"] == "ok":
                    rec = run_record(result, outcome.config)
                    pending.params, pending.metrics, pending.tags = rec.params, dict(rec.metrics), dict(rec.tags)
                    pending.set_status(result.status, result.reason)
                else:
                    pending.params = {"hardware.name": row["platform"], "model.name": req.model}
                    pending.tags = {
                        "dabench.hardware": row["platform"],
                        "dabench.mode": "predict",
                        "dabench.model": req.model,
                    }
                    worst = max(
                        (s for s in outcome.statuses if s not in ("ok", "over_budget")),
                        key=outcome.statuses.get,
                        default="capacity",
                    )
                    pending.set_status(worst, row.get("reason") or "no deployment fits")
                values = {**row, "tokens": req.tokens}
                pending.metrics.update(
                    {
                        name: float(values[key])
                        for key, name in _ROW_METRICS.items()
                        if is_number(values.get(key)) and math.isfinite(values[key])
                    }
                )
                pending.tags.update(
                    {
                        ADVISE_TAG: "best",
                        PARENT_TAG: parent.run_id,
                        "dabench.label": "PREDICTED",
                        "advise.command": row.get("command") or "",
                        "advise.measure_command": row.get("measure_command") or "",
                        "advise.reach": row.get("reach") or "",
                        "advise.calibration": row.get("out_of_sample_error") or "",
                        "advise.band": row.get("band") or "no band",
                        "advise.power_source": row.get("power_source") or "",
                    }
                )
                pending.end_ms = now_ms()
                batch.add(pending)
        return parent.run_id
