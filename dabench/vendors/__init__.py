"""Execution-side runners for vendor SDKs (PopTorch, cerebras.pytorch, SambaFlow).

Each runner is ``python -m dabench.vendors.<name>_runner request.json result.json`` and runs in
the vendor's own interpreter (``hardware.python``); see :mod:`dabench.vendors.child`. Only the
standard library, torch, the SDK and :mod:`dabench.workload.model` may be imported here.
"""
