"""Fake ``parse_app_args``: accepts only the documented SambaFlow app flags (an unknown flag
fails, as argparse does in a real app)."""

import argparse

from fake_recorder import record


def parse_app_args(argv=None, common_parser_fn=None, run_parser_fn=None, **kwargs):
    record("parse_app_args", argv=argv)
    parser = argparse.ArgumentParser(prog="app.py")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in ("compile", "run", "test", "measure-performance"):
        p = sub.add_parser(command)
        p.add_argument("-b", "--batch-size", type=int, default=1)
        p.add_argument("--pef-name")
        p.add_argument("--output-folder")
        p.add_argument("--pef")
        p.add_argument("--num-tiles", type=int, default=4)
        p.add_argument("--n-chips", type=int, default=1)
        p.add_argument("--tensor-parallel", choices=("batch", "weight"))
        p.add_argument("--mapping", choices=("spatial", "section"), default="section")
        p.add_argument("--data-parallel", action="store_true")
        p.add_argument("--enable-mixed-precision-ops", nargs="+")
        for level in ("o0", "o1", "o3"):
            p.add_argument("-" + level, dest="optim_level", action="store_const", const=level)
    return parser.parse_args(argv)
