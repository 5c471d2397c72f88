"""Fake ``get_pefmeta``."""

from fake_recorder import record


def get_pefmeta(args, model):
    record("get_pefmeta", command=args.command)
    return {"app": "dabench", "batch_size": args.batch_size}
