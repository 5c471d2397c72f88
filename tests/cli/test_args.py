"""Every subcommand in ``cli/main.py: COMMANDS`` declares its arguments once (``ARGS``, a
cli/args.py Schema) and refuses a bad one before any work: exit 2 and one line naming the
argument and the value. Driven by the registry: a new command is covered without a new test."""

from __future__ import annotations

import importlib
import math
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.cli.args import MAX_TEXT, Arg, ArgError, Schema, parse
from dabench.cli.main import COMMANDS

SCHEMAS: dict[str, Schema] = {name: importlib.import_module(module).ARGS for name, (module, _) in COMMANDS.items()}
CASES = [(name, arg) for name, schema in SCHEMAS.items() for arg in schema.args]
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def good(arg: Arg) -> str:
    """A value the argument accepts."""
    if arg.kind in ("choice", "list"):
        return arg.allowed()[0]
    if arg.kind in ("int", "float"):
        low = 0 if arg.low is None else arg.low
        value = low + 1 if arg.above or arg.low is None else low
        return str(int(value)) if arg.kind == "int" else str(float(value))
    return "x"


def words(schema: Schema, arg: Arg, text: str | None) -> list[str]:
    """argv giving ``arg`` the value ``text`` (a flag: itself) and every other required argument a good one."""
    argv: list[str] = []
    for other in schema.args:
        if other is arg or not other.required:
            continue
        argv.append(f"{other.name}={good(other)}" if schema.words else good(other))
    if schema.words:
        return [*argv, f"{arg.name}={text}"]
    if arg.kind == "flag":
        return [*argv, arg.name]
    return [*argv, f"{arg.name}={text}"] if arg.option else [*argv, text]


def bad_values(arg: Arg) -> st.SearchStrategy[str]:
    """Values no argument of this kind may accept: out of range, wrong type, empty, huge, control
    characters, inf/nan."""
    text_junk = st.sampled_from(["\x00", "a\nb", "\t", "x" * (MAX_TEXT + 1)])
    junk = text_junk if arg.empty_ok else st.one_of(text_junk, st.just(""))
    if arg.kind == "int":
        out = []
        if arg.low is not None:
            out.append(st.integers(max_value=int(arg.low) - (0 if arg.above else 1)))
        if arg.high is not None:
            out.append(st.integers(min_value=int(arg.high) + 1))
        nonint = st.sampled_from(["1.5", "nan", "inf", "-inf", "1e3", "abc", "0x10"])
        return st.one_of(junk, nonint, *(s.map(str) for s in out))
    if arg.kind == "float":
        out = [st.sampled_from(["nan", "inf", "-inf", "NaN", "1e999", "abc"])]
        if arg.low is not None:
            bound = st.floats(max_value=arg.low, exclude_max=not arg.above, allow_nan=False, allow_infinity=False)
            out.append(bound.map(repr))
        if arg.high is not None:
            out.append(st.floats(min_value=arg.high, exclude_min=True, allow_nan=False).map(repr))
        return st.one_of(junk, *out)
    if arg.kind in ("choice", "list"):
        allowed = set(arg.allowed())
        other = st.text(min_size=1, max_size=12).filter(lambda t: t not in allowed and "," not in t)
        if arg.kind == "list":
            first = sorted(allowed)[0]
            return st.one_of(junk, other, st.just(f"{first},{first}"), st.just(f"{first},"))
        return st.one_of(junk, other)
    return junk


VALUED = [(name, arg) for name, arg in CASES if arg.kind != "flag"]


@pytest.mark.parametrize("name, arg", VALUED, ids=[f"{n}:{a.name}" for n, a in VALUED])
@SETTINGS
@given(data=st.data())
def test_a_bad_value_is_one_line_naming_the_argument(name, arg, data):
    schema = SCHEMAS[name]
    text = data.draw(bad_values(arg))
    argv = words(schema, arg, text)
    if not schema.words and not arg.option and text.startswith("-"):
        return  # a positional that looks like an option is refused as an unknown option (below)
    with pytest.raises(ArgError) as refused:
        parse(schema, argv)
    message = str(refused.value)
    assert "\n" not in message and message.startswith(arg.name), message
    assert len(message) < 2 * MAX_TEXT // 8, message


@pytest.mark.parametrize("name, arg", CASES, ids=[f"{n}:{a.name}" for n, a in CASES])
def test_a_good_value_is_taken_and_typed(name, arg):
    schema = SCHEMAS[name]
    values = parse(schema, words(schema, arg, good(arg)))
    got = getattr(values, arg.dest)
    if arg.kind == "flag":
        assert got is True
    elif arg.kind in ("int", "float"):
        got = got[0] if isinstance(got, list) else got
        assert isinstance(got, (int, float)) and math.isfinite(got) and float(got) == float(good(arg))
    elif arg.kind != "path":
        flat = got if isinstance(got, list) else [got]
        while flat and isinstance(flat[0], list):
            flat = flat[0]
        assert str(flat[0]) == good(arg)


REPEATABLE = [(n, a) for n, a in CASES if (a.option or SCHEMAS[n].words) and not a.repeats]


@pytest.mark.parametrize("name, arg", REPEATABLE, ids=[f"{n}:{a.name}" for n, a in REPEATABLE])
def test_an_argument_that_does_not_repeat_is_refused_twice(name, arg):
    schema = SCHEMAS[name]
    once = words(schema, arg, good(arg))
    with pytest.raises(ArgError, match=rf"^{arg.name}.*give it once"):
        parse(schema, [*once, once[-1]])


@pytest.mark.parametrize("name", SCHEMAS)
def test_an_unknown_argument_is_refused_with_its_name(name):
    schema = SCHEMAS[name]
    required = [a for a in schema.args if a.required]
    argv = [f"{a.name}={good(a)}" if schema.words else good(a) for a in required]
    with pytest.raises(ArgError, match=r"^--no-such-flag.*unknown"):
        parse(schema, [*argv, "--no-such-flag=1"])


@pytest.mark.parametrize("name", SCHEMAS)
def test_main_refuses_before_any_work(name, capsys, tmp_path, monkeypatch):
    """The command itself: a bad argument ends it with exit 2, one line on stderr, no file written."""
    monkeypatch.chdir(tmp_path)
    schema = SCHEMAS[name]
    module = importlib.import_module(COMMANDS[name][0])
    argv = [*words(schema, schema.args[0], good(schema.args[0])), "--no-such-flag=\x00"]
    try:
        code = module.main(argv)
    except SystemExit as done:
        code = done.code
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"dabench {name}:") and "\n" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", SCHEMAS)
def test_help_lists_every_argument(name, capsys):
    module = importlib.import_module(COMMANDS[name][0])
    try:
        code = module.main(["--help"])
    except SystemExit as done:
        code = done.code
    out = capsys.readouterr().out
    assert code == 0
    for arg in SCHEMAS[name].args:
        assert arg.name in out or (arg.metavar or "") in out, (name, arg.name)


def test_cli_runs_exit_2_with_one_line(run_cli, tmp_path):
    """Through the entry point, as a user types them."""
    cases = [
        (["ui", "--port", "-1"], "--port=-1"),
        (["study", "--top", "nan"], "--top=nan"),
        (["advise", "model=tiny", "tokens=inf"], "tokens=inf"),
        (["calibrate", "--threads", "0"], "--threads=0"),
    ]
    for argv, words_ in cases:
        done = run_cli(*argv, code=None)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and words_ in lines[0], (argv, done.stderr[-2000:])


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))
