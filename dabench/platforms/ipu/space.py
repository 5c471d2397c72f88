"""The IPU deployment space as a structured-space hook: IPUs, replication, gradient accumulation
(``pipeline_fill`` x (2k - 1) for k stages) and the layers-per-IPU placement, valid by construction;
``grid()``, ``size()`` and ``params_of()`` enumerate the same deployments. Details: docs/tuning.md,
"IPU placements, valid by construction".
"""

from __future__ import annotations

from typing import Any, Iterator, Mapping, Sequence

from dabench.advise.space import Dim, PlatformSpace
from dabench.core.status import ConfigError
from dabench.tune.placement import count_placements, placement_from_params, placements, stage_values


def training_pipeline_stages(ipus_per_replica: int) -> int:
    """2k - 1: PopTorch's pipeline stages for training over k IPUs (forward and backward)."""
    return 2 * ipus_per_replica - 1


def _positive_ints(name: str, values: Sequence[Any]) -> tuple[int, ...]:
    if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
        raise ConfigError(f"hydra.sweeper.space.args.{name}", list(values or []), "a non-empty list of integers >= 1")
    return tuple(sorted(set(values)))


class IpuPipelineSpace:
    def __init__(
        self,
        config: Mapping[str, Any],
        ipus: Sequence[int] = (1, 2, 4, 8),
        replication: Sequence[int] | None = None,
        pipeline_fill: Sequence[int] = (1, 2, 4, 8, 16),
        placement_skew: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 1.0),
        min_first_stage_layers: int = 0,
        max_first_stage_layers: int | None = None,
        min_stage_layers: int = 1,
    ) -> None:
        self.n_layers = int(config["model"]["n_layers"])
        self.fills = _positive_ints("pipeline_fill", pipeline_fill)
        self.skews = tuple(float(s) for s in placement_skew)
        if not self.skews or any(not 0.0 <= s <= 1.0 for s in self.skews):
            raise ConfigError("hydra.sweeper.space.args.placement_skew", list(placement_skew), "values in [0, 1]")
        self.bounds = dict(
            min_first=int(min_first_stage_layers),
            min_other=int(min_stage_layers),
            max_first=None if max_first_stage_layers is None else int(max_first_stage_layers),
        )
        allowed = None if replication is None else set(_positive_ints("replication", replication))
        self.topologies: dict[int, tuple[int, ...]] = {}
        for n in _positive_ints("ipus", ipus):
            reps = tuple(
                r
                for r in range(1, n + 1)
                if n % r == 0
                and (allowed is None or r in allowed)
                and count_placements(self.n_layers, n // r, **self.bounds) > 0
            )
            if reps:
                self.topologies[n] = reps
        if not self.topologies:
            raise ConfigError(
                "hydra.sweeper.space.args.ipus",
                list(ipus),
                f"at least one IPU count whose pipeline can hold model.n_layers={self.n_layers}",
            )
        top = self.n_layers if self.bounds["max_first"] is None else min(self.n_layers, self.bounds["max_first"])
        self.first_choices = list(range(self.bounds["min_first"], top + 1))

    def deployment(self, stages: int, replicas: int, fill: int, placement: Sequence[int]) -> dict[str, Any]:
        """The overrides of one deployment."""
        return {
            "parallel.degree": stages,
            "parallel.replicas": replicas,
            "parallel.layers_per_stage": list(placement),
            "run.grad_accum": fill * training_pipeline_stages(stages),
        }

    def suggest(self, trial) -> dict[str, Any]:
        n = trial.suggest_categorical("ipus", list(self.topologies))
        r = trial.suggest_categorical(f"replication.ipus{n}", list(self.topologies[n]))
        k = n // r
        fill = trial.suggest_categorical("pipeline_fill", list(self.fills))
        first, skew, z = self.n_layers, 0.0, []
        if k > 1:
            first = trial.suggest_categorical("first_stage_layers", self.first_choices)
            if k > 2:
                skew = trial.suggest_categorical("placement_skew", list(self.skews))
                if skew > 0:
                    z = [trial.suggest_float(f"stage_weight.{i}", 0.0, 1.0) for i in range(1, k)]
        placement = placement_from_params(self.n_layers, k, first, skew, z, **self.bounds)
        return self.deployment(k, r, fill, placement)

    def params_of(self, deployment: Mapping[str, Any]) -> dict[str, Any] | None:
        """Optuna parameters that :meth:`suggest` turns into ``deployment`` (one of :meth:`grid`);
        None when this space's skews cannot reach its placement."""
        k, r = int(deployment["parallel.degree"]), int(deployment["parallel.replicas"])
        placement = tuple(deployment["parallel.layers_per_stage"])
        params: dict[str, Any] = {
            "ipus": k * r,
            f"replication.ipus{k * r}": r,
            "pipeline_fill": int(deployment["run.grad_accum"]) // training_pipeline_stages(k),
        }
        if k == 1:
            return params
        params["first_stage_layers"] = placement[0]
        if k == 2:
            return params
        free = [layers - self.bounds["min_other"] for layers in placement[1:]]
        for skew in self.skews:
            z = stage_values(free, skew) if skew > 0 else []
            if placement_from_params(self.n_layers, k, placement[0], skew, z, **self.bounds) == placement:
                return {**params, "placement_skew": skew, **{f"stage_weight.{i}": v for i, v in enumerate(z, 1)}}
        return None

    def placements(self, stages: int) -> Iterator[tuple[int, ...]]:
        """The placements of ``stages`` stages this space reaches: all, or with only skew 0 the even ones."""
        if any(self.skews):
            return placements(self.n_layers, stages, **self.bounds)
        even = (placement_from_params(self.n_layers, stages, f, **self.bounds) for f in self.first_choices)
        return iter(sorted(set(even)))

    def size(self) -> int:
        if not any(self.skews):
            return len(list(self.grid()))
        return len(self.fills) * sum(
            count_placements(self.n_layers, n // r, **self.bounds) for n, reps in self.topologies.items() for r in reps
        )

    def grid(self) -> Iterator[dict[str, Any]]:
        for n, reps in self.topologies.items():
            for r in reps:
                for fill in self.fills:
                    for placement in self.placements(n // r):
                        yield self.deployment(n // r, r, fill, placement)


ipu_pipeline_space = IpuPipelineSpace  #: the hook named in sweeps/ipu_deploy.yaml


def advise_space(space: PlatformSpace, args: dict, config: Mapping[str, Any], chips: list[int]) -> PlatformSpace:
    """Even placements only (skew 0): throughput is set by the most loaded IPU, so spreading the
    layers evenly over IPUs 1..k-1 is what the paper and Graphcore's recipes do; IPU 0 (embedding
    and head) gets first_stage_layers in 0..ceil(L/2). Plus replicated tensor sharding."""
    layers = int(config["model"].get("n_layers") or 1)
    args = {**args, "ipus": chips, "placement_skew": [0.0], "max_first_stage_layers": max(1, -(-layers // 2))}
    space.structured = ipu_pipeline_space(config, **args)
    space.dims.append(Dim("hardware.options.replicated_tensor_sharding", [False, True]))
    space.notes.append("replicated tensor sharding (Graphcore GPT-2 recipes)")
    return space
