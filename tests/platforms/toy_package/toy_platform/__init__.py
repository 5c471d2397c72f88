"""A toy accelerator: one chip running every FLOP at ``efficiency`` x its peak (model.py). Its
record imports nothing else of dabench: the registry loads it while dabench's config loads."""

from pathlib import Path

from dabench.core.platforms import Platform, PowerFigure


def predict(rc, graph, ceilings):
    from toy_platform.model import predict

    return predict(rc, graph, ceilings)


def toy():
    from toy_platform.backend import ToyBackend

    return ToyBackend


def options():
    from toy_platform.model import ToyOptions

    return ToyOptions


PLATFORM = Platform(
    "toy",
    predict,
    {"toy": toy},
    options,
    power=PowerFigure(None, "unsourced", "a toy has no power figure"),
    conf=str(Path(__file__).parent / "conf"),
)
