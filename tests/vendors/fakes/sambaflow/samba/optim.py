"""Fake ``sambaflow.samba.optim``."""

import torch
from fake_recorder import record


def AdamW(params, **kwargs):
    record("optim.AdamW", **kwargs)
    return torch.optim.AdamW(params, **kwargs)
