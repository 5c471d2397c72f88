"""The shared execution side of the vendor SDK runners (PopTorch, cerebras.pytorch, SambaFlow).

Each runner lives in its platform's folder, ``python -m dabench.platforms.<family>.runner
request.json result.json``, and runs in the vendor's own interpreter (``hardware.python``); see
:mod:`dabench.vendors.child`. Only the standard library, torch, the SDK, this package,
:mod:`dabench.workload.model` and the folder's ``__init__`` (which imports only
:mod:`dabench.core.platforms`) may be imported there, under Python 3.8.
"""
