"""Every subcommand of ``cli/main.py: COMMANDS`` is declared once on the command frame
(cli/frame.py) and refuses a bad argument or config override before any work: exit 2 and one line
naming the argument, the value and what is valid. Driven by the declarations: a new command, or a
new argument, is covered without a new test."""

from __future__ import annotations

import importlib
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dabench.cli.frame import Command, dest, failure
from dabench.cli.main import COMMANDS
from dabench.config.fields import BOOL, CHOICE, INT, LIST, NUMBER, TEXT, Spec
from dabench.core.status import ConfigError
from tests.conftest import schema_leaves

DECLARED: dict[str, Command] = {name: importlib.import_module(module).main for name, (module, _) in COMMANDS.items()}
CASES = [(name, key, spec) for name, cmd in DECLARED.items() for key, spec in cmd.args.items()]
IDS = [f"{n}:{k}" for n, k, _ in CASES]
SETTINGS = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def good(spec: Spec) -> str:
    """A value the argument accepts, as text."""
    if spec.kind == LIST:
        return good(spec.item)
    if spec.kind == CHOICE:
        return spec.choices[0]
    if spec.kind in (INT, NUMBER):
        low = 0 if spec.low is None else spec.low
        value = low + 1 if spec.low_open or spec.low is None else low
        return str(int(value)) if spec.kind == INT else str(float(value))
    return "true" if spec.kind == BOOL else "x"


def argv_for(cmd: Command, key: str | None, text: str | None) -> list[str]:
    """argv giving ``key`` the value ``text`` (a flag: itself) and every other required argument a good one."""
    argv = [f"{k}={good(s)}" if cmd.words else good(s) for k, s in cmd.args.items() if s.required and k != key]
    if key is None:
        return argv
    spec = cmd.args[key]
    if cmd.words:
        return [*argv, f"{key}={text}"]
    if spec.kind == BOOL:
        return [*argv, key]
    return [*argv, f"{key}={text}"] if key.startswith("-") else [*argv, text]


def bad_values(spec: Spec) -> st.SearchStrategy[str]:
    """Text no argument of this kind accepts: out of range, wrong type, control characters, too long, inf/nan."""
    junk = st.sampled_from(["\x00", "a\nb", "\t", "x" * ((spec.item or spec).max_len + 1)])
    junk = junk if spec.kind == TEXT and not spec.min_len else st.one_of(junk, st.just(""))
    if spec.kind == INT:
        edges = [st.sampled_from(["1.5", "nan", "inf", "-inf", "1e3", "abc", "0x10", "9" * 5000])]
        if spec.low is not None:
            edges.append(st.integers(max_value=int(spec.low) - (0 if spec.low_open else 1)).map(str))
        if spec.high is not None:
            edges.append(st.integers(min_value=int(spec.high) + 1).map(str))
        return st.one_of(junk, *edges)
    if spec.kind == NUMBER:
        edges = [st.sampled_from(["nan", "inf", "-inf", "NaN", "1e999", "abc"])]
        if spec.low is not None:
            below = st.floats(max_value=spec.low, exclude_max=not spec.low_open, allow_nan=False, allow_infinity=False)
            edges.append(below.map(repr))
        if spec.high is not None:
            edges.append(st.floats(min_value=spec.high, exclude_min=True, allow_nan=False).map(repr))
        return st.one_of(junk, *edges)
    if spec.kind in (CHOICE, LIST):
        allowed = set((spec.item or spec).choices)
        if not allowed:  # a list of free text: its items are checked as text
            return junk.filter(lambda t: t != "" and "," not in t)
        other = st.text(min_size=1, max_size=12).filter(lambda t: t not in allowed and "," not in t)
        first = sorted(allowed)[0]
        return st.one_of(junk, other, st.just(f"{first},{first}"), st.just(f"{first},")) if spec.kind == LIST else other
    if spec.kind == BOOL:  # a key=value word; an option flag takes no value
        return st.sampled_from(["yes", "1", "", "True "])
    return junk


VALUED = [(n, k, s) for n, k, s in CASES if not (s.kind == BOOL and k.startswith("-"))]


@pytest.mark.parametrize("name, key, spec", VALUED, ids=[f"{n}:{k}" for n, k, _ in VALUED])
@SETTINGS
@given(data=st.data())
def test_a_bad_value_is_one_line_naming_the_argument(name, key, spec, data):
    cmd = DECLARED[name]
    text = data.draw(bad_values(spec))
    if not cmd.words and not key.startswith("-") and text.startswith("-"):
        return  # a positional that looks like an option is refused as an unknown option (below)
    with pytest.raises(ConfigError) as refused:
        cmd.parse(argv_for(cmd, key, text))
    line = failure(refused.value)
    assert "\n" not in line and line.startswith(key), line
    assert len(line) < 1200, line


@pytest.mark.parametrize("name, key, spec", CASES, ids=IDS)
def test_a_good_value_is_taken_and_typed(name, key, spec):
    cmd = DECLARED[name]
    got = getattr(cmd.parse(argv_for(cmd, key, good(spec))), dest(key))
    if spec.kind == BOOL:
        assert got is True
    elif spec.kind in (INT, NUMBER):
        assert isinstance(got, (int, float)) and math.isfinite(got) and float(got) == float(good(spec))
    else:
        assert str(got[0] if spec.kind == LIST else got) == good(spec)


ONCE = [(n, k, s) for n, k, s in CASES if (k.startswith("-") or DECLARED[n].words) and s.kind != LIST]


@pytest.mark.parametrize("name, key, spec", ONCE, ids=[f"{n}:{k}" for n, k, _ in ONCE])
def test_an_argument_given_twice_is_refused(name, key, spec):
    cmd = DECLARED[name]
    once = argv_for(cmd, key, good(spec))
    with pytest.raises(ConfigError, match="give it once") as refused:
        cmd.parse([*once, once[-1]])
    assert failure(refused.value).startswith(key)


@pytest.mark.parametrize("name", DECLARED)
def test_an_unknown_argument_is_refused_with_its_name(name):
    cmd = DECLARED[name]
    with pytest.raises(ConfigError, match="unknown argument") as refused:
        cmd.parse([*argv_for(cmd, None, None), "--no-such-flag=1"])
    line = failure(refused.value)
    assert line.startswith("--no-such-flag") and "; ;" not in line and ";;" not in line  # no empty hint


#: config fields an override reaches, each with one value it accepts (the composed run's schema)
FIELDS = {path: spec for path, spec in schema_leaves().items() if "[" not in path and "*" not in path}
OVERRIDES = [(n, path) for n, cmd in DECLARED.items() if cmd.overrides for path in FIELDS]
OVERRIDES = [(n, p) for n, p in OVERRIDES if DECLARED[n].overrides == "*" or p.startswith(DECLARED[n].overrides)]


#: values no field takes: Hydra's override grammar cannot parse them
UNPARSABLE = ["[1", "{a", "'x", "a)b", "x=y", "<b>&"]


def bad_override(spec: Spec) -> st.SearchStrategy[str]:
    """Values the run's schema refuses for a field of this kind (as Hydra reads them), or that
    Hydra's grammar cannot parse."""
    return st.one_of(_bad_value(spec), st.sampled_from(UNPARSABLE))


def _bad_value(spec: Spec) -> st.SearchStrategy[str]:
    if spec.kind == INT:
        edges = [st.sampled_from(["abc", "1.5", "nan", "true"])]
        if spec.low is not None:
            edges.append(st.integers(max_value=int(spec.low) - (0 if spec.low_open else 1)).map(str))
        if spec.high is not None:
            edges.append(st.integers(min_value=int(spec.high) + 1).map(str))
        return st.one_of(*edges)
    if spec.kind == NUMBER:
        return st.sampled_from(["abc", "nan", "inf", "-inf", "true"])
    if spec.kind == BOOL:
        return st.sampled_from(["abc", "2", "nan"])
    if spec.kind == CHOICE:
        return st.text(alphabet="abcxyz_", min_size=1, max_size=8).filter(lambda t: t not in spec.choices)
    return st.just("x" * (spec.max_len + 1)) if spec.kind == TEXT else st.nothing()


CHECKED = [(n, p) for n, p in OVERRIDES if FIELDS[p].kind in (INT, NUMBER, BOOL, CHOICE, TEXT)]


@pytest.mark.parametrize("name, path", CHECKED, ids=[f"{n}:{p}" for n, p in CHECKED])
@settings(max_examples=5, deadline=None)
@given(data=st.data())
def test_a_bad_override_is_refused_by_the_runs_schema(name, path, data):
    cmd = DECLARED[name]
    value = data.draw(bad_override(FIELDS[path]))
    with pytest.raises(ConfigError) as refused:
        cmd.parse([*argv_for(cmd, None, None), f"{path}={value}"])
    line = failure(refused.value)
    assert line.startswith(path) and "\n" not in line, line


@pytest.mark.parametrize("name", [n for n, cmd in DECLARED.items() if cmd.overrides])
def test_a_good_override_and_an_unknown_key(name):
    cmd = DECLARED[name]
    prefix = "model." if cmd.overrides == "*" else cmd.overrides
    assert cmd.parse([*argv_for(cmd, None, None), f"{prefix}n_layers=2"]).overrides[-1] == f"{prefix}n_layers=2"
    with pytest.raises(ConfigError, match="did you mean"):
        cmd.parse([*argv_for(cmd, None, None), f"{prefix}n_layer=2"])


@pytest.mark.parametrize("name", DECLARED)
def test_main_refuses_before_any_work(name, capsys, tmp_path, monkeypatch):
    """The command itself: a bad argument ends it with exit 2, one line on stderr, no file written."""
    monkeypatch.chdir(tmp_path)
    code = DECLARED[name]([*argv_for(DECLARED[name], None, None), "--no-such-flag=\x00"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith(f"dabench {name}:") and "\n" not in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", DECLARED)
def test_help_lists_every_argument(name, capsys):
    assert DECLARED[name](["--help"]) == 0
    out = capsys.readouterr().out
    for key in DECLARED[name].args:
        assert key in out, (name, key)


def test_a_secret_in_a_refused_value_is_masked():
    cmd = DECLARED["compare"]
    with pytest.raises(ConfigError) as refused:
        cmd.parse(["abc", "--tracking-uri", "http://u:hunter2@example.com/\x01"])
    assert "hunter2" not in failure(refused.value)


def test_cli_runs_exit_2_with_one_line(run_cli):
    """Through the entry point, as a user types them."""
    cases = [
        (["ui", "--port", "-1"], "--port=-1"),
        (["study", "--top", "nan"], "--top=nan"),
        (["advise", "model=tiny", "tokens=inf"], "tokens=inf"),
        (["advise", "model=tiny", "tokens=1e9", "model.n_layers=abc"], "model.n_layers=abc"),
        (["advise", "model=tiny", "tokens=1e9", "experiment=" + "x" * 600], "experiment="),
        (["calibrate", "--threads", "0"], "--threads=0"),
        (["hardware=ipu", "model.n_layers=[1"], "model.n_layers='[1'"),  # the run: Hydra's grammar
        (["grid", "hydra.run.dir=[a", "model.n_layers=1"], "hydra.run.dir=[a"),
    ]
    for argv, words_ in cases:
        done = run_cli(*argv, code=None)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2 and len(lines) == 1 and words_ in lines[0], (argv, done.stderr[-2000:])


def test_a_comma_list_override_checks_each_item():
    grid = DECLARED["grid"]
    assert len(grid.parse(['parallel.placement="0 4","0 2 1 1"', "model.n_layers=1,2"]).overrides) == 2
    with pytest.raises(ConfigError) as refused:
        grid.parse(["model.n_layers=2,abc"])
    assert failure(refused.value).startswith("model.n_layers=abc: must be an integer")


@pytest.mark.parametrize("name", DECLARED)
@pytest.mark.parametrize("sig,code,word", [(2, 130, "interrupted"), (15, 143, "terminated (SIGTERM)")])
def test_a_signal_during_a_command_is_one_line_and_128_plus_the_signal(name, sig, code, word, capsys, monkeypatch):
    """Ctrl-C or SIGTERM while the command works (here: as its body starts) ends it through the
    frame's guard, as a run ends (runtime/interrupts.py): open records closed, one line, 128 + signal."""
    import dataclasses
    import signal

    def body(args):
        signal.getsignal(sig)(sig, None)  # the handler the guard installed, as the signal would run it
        raise AssertionError("the signal did not stop the command")

    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    if sig == 2:
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a terminal's Ctrl-C
    cmd = dataclasses.replace(DECLARED[name], body=body)
    with pytest.raises(SystemExit) as ended:
        cmd(argv_for(cmd, None, None))
    err = capsys.readouterr().err
    assert ended.value.code == code and err == f"dabench {name}: {word}\n", err
    assert {s: signal.getsignal(s) for s in previous} == previous
