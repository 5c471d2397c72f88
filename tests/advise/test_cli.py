"""dabench advise: argument errors are one line and exit 2; --help; the command is registered."""

import pytest

from dabench.cli import advise as cli
from dabench.cli.main import COMMANDS


def test_registered():
    assert COMMANDS["advise"][0] == "dabench.cli.advise"


def test_help(capsys):
    assert cli.main(["--help"]) == 0
    assert "tokens=N" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, words",
    [
        (["tokens=1e9"], "model: required"),
        (["model=nope", "tokens=1e9"], "model=nope: must be one of "),
        (["model=gpt2_xl"], "tokens: required"),
        (["model=gpt2_xl", "tokens=lots"], "tokens=lots"),
        (["model=gpt2_xl", "tokens=1e9", "platforms=cuda,tpu"], "platforms[1]=tpu: must be one of"),
        (["model=gpt2_xl", "tokens=1e9", "objective=speed"], "objective[0]=speed: must be one of"),
        (["model=gpt2_xl", "tokens=1e9", "model.n_layers=abc"], "model.n_layers=abc: must be an integer"),
        (["model=gpt2_xl", "tokens=1e9", "model.n_layers=0"], "model.n_layers=0: must be >= 1"),
        (["model=gpt2_xl", "tokens=1e9", "objective=cost"], "cost needs price_per_chip_hour"),
        (["model=gpt2_xl", "tokens=1e9", "max_chips=0"], "max_chips=0: must be >= 1"),
        (["model=gpt2_xl", "tokens=1e9", "max_chip=4"], "did you mean max_chips"),
        (["model=gpt2_xl", "tokens=1e9", "oops"], "key=value"),
    ],
)
def test_bad_arguments_exit_2(capsys, argv, words):
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("dabench advise:") and words in err and "\n" not in err


def test_tokens_suffixes():
    assert cli.parse_tokens("300B") == 3e11
    assert cli.parse_tokens("2.5T") == 2.5e12
    assert cli.parse_tokens("1e9") == 1e9


def test_parse_collects_model_overrides():
    args = cli.main.parse(
        [
            "model=gpt2_xl",
            "model.n_layers=12",
            "tokens=1M",
            "platforms=rdu",
            "objective=time,energy",
            "price_per_chip_hour=2",
            "record=false",
        ]
    )
    request = cli.request_of(args)
    assert not args.record and request.model_overrides == ["model.n_layers=12"] and request.platforms == ["rdu"]
    assert request.objectives == ["time", "energy"] and request.price_per_chip_hour == 2.0
