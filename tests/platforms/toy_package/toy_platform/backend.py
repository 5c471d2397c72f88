"""The toy's measured side: there is no device, so ``hardware.mode=auto`` predicts."""

from dabench.backends.base import Availability, Backend


class ToyBackend(Backend):
    name = "toy"

    @classmethod
    def availability(cls, rc):
        return Availability(False, "a toy accelerator has no device; use hardware.mode=predict")

    def run(self, rc, graph, on_timed_window=None):
        raise NotImplementedError("a toy accelerator has no device")
