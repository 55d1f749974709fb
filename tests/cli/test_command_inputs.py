"""Bad input to ``crfsdca learn / tag / dump``: one line naming the parameter, or the file
and line, exit status 2, no traceback, no model; pipes and SIGTERM end as CRFsuite's
command line and the train command do."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from helpers.inputs import DATA

from crfsdca.cli import main
from crfsdca.model_file import load_model


@pytest.fixture
def data_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(DATA, encoding="utf-8")
    return path


# ------------------------------------------------------------------------ learn/tag/dump

@pytest.mark.parametrize("args, message", [
    (["-p", "c2=-1"], "c2 must be a finite number >= 0"),
    (["-p", "c2=nan"], "c2 must be a finite number >= 0"),
    (["-p", "c1=-1"], "c1 must be a finite number >= 0"),
    (["-p", "c2=0"], "sdca needs an L2 term"),
    (["-a", "oeg", "-p", "c1=1"], "oeg does not handle an L1 term"),
    (["-p", "nope=1"], "parameter not found: nope"),
    (["-p", "threads=x"], "threads: expected int"),
    (["-x", "-g", "1000"], "-g 1000: 16 instance(s), so at most 16 groups"),
])
def test_learn_parameters_give_one_line(data_file, tmp_path, capsys, args, message):
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), *args, str(data_file)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not model.exists()


@pytest.mark.parametrize("line, message", [
    ("D\tw:nan\n", "weight 'nan' is not a finite number"),
    ("D\tw:inf\n", "weight 'inf' is not a finite number"),
    ("D\tw:1e400\n", "weight '1e400' is not a finite number"),
    ("D\t\x00x\n", "attribute '\\x00x' has an empty name"),
    ("\x00D\tw\n", "bad label '\\x00D' (an empty label"),
])
def test_learn_data_errors_name_file_and_line(tmp_path, capsys, line, message):
    bad = tmp_path / "bad.txt"
    bad.write_text("D\tw=a\n" + line + "\n", encoding="utf-8")
    assert main(["learn", "-q", "-m", str(tmp_path / "m.model"), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:2:" in err and message in err and "Traceback" not in err


def test_names_end_at_a_nul_in_data_files(tmp_path, capsys):
    """CRFsuite reads names and labels as C strings: ``w=a\\0x`` is ``w=a``, ``N\\0oun``
    is ``N``, by learn and by tag (a name left empty is refused, as any empty name)."""
    data = tmp_path / "nul.txt"
    data.write_text("D\tw=the\x00x\nN\x00oun\tw=cat\n\n" + "D\tw=a\nN\tw=dog\x00\n\n" * 4,
                    encoding="utf-8")
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), str(data)]) == 0
    m = load_model(model)
    assert m.labels == ["D", "N"] and m.attributes == ["w=the", "w=cat", "w=a", "w=dog"]
    capsys.readouterr()
    assert main(["tag", "-m", str(model), "-qt", str(data)]) == 0
    assert "Item accuracy: 10 / 10" in capsys.readouterr().out


def test_learn_output_path_is_checked_before_training(data_file, tmp_path, capsys):
    assert main(["learn", "-q", "-m", str(tmp_path), str(data_file)]) == 2
    assert "is a directory" in capsys.readouterr().err


def test_dump_into_a_closed_pipe_ends_quietly(data_file, tmp_path):
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), str(data_file)]) == 0
    proc = subprocess.run(f"{sys.executable} -m crfsdca dump {model} | head -1", shell=True,
                          capture_output=True, text=True, timeout=120)
    assert proc.stdout.startswith("FILEHEADER") and proc.stderr == "", proc.stderr


def _random_data(path, sequences: int, vocabulary: int, seed: int):
    """A CRFsuite data file of ``sequences`` sequences of 8 items, labels A-D, two
    attributes of ``vocabulary`` values each: a fit of many epochs."""
    rng = np.random.default_rng(seed)
    lines = []
    for _ in range(sequences):
        for _ in range(8):
            lines.append(f"{'ABCD'[rng.integers(4)]}\tw={rng.integers(vocabulary)}\t"
                         f"v={rng.integers(vocabulary)}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n")
    return path


def _sigterm_at_first_epoch(args: list[str]):
    """``crfsdca learn ARGS`` sent SIGTERM once its first epoch line is out: (the lines
    before it, the rest of stdout, stderr, the exit status)."""
    proc = subprocess.Popen([sys.executable, "-m", "crfsdca", "learn", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    seen = ""
    while "epoch" not in seen:
        line = proc.stdout.readline()
        assert line and time.monotonic() < deadline, proc.stderr.read()
        seen += line
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    return seen, out, err, proc.returncode


def test_learn_terminated_keeps_a_complete_model_and_exits_143(tmp_path):
    """SIGTERM during learn: the model reached, complete, status terminated, exit 143 (as
    the train command)."""
    data = _random_data(tmp_path / "big.txt", 3000, 5000, seed=0)
    model = tmp_path / "m.model"
    _, out, err, returncode = _sigterm_at_first_epoch(
        ["-m", str(model), "-p", "epsilon=0", "-p", "max_iterations=100000", str(data)])
    assert returncode == 143, out + err
    m = load_model(model)
    assert m.training["status"] == "terminated"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries
    json.dumps(m.options)


def test_learn_cross_validation_stops_at_sigterm(tmp_path):
    """SIGTERM during a fold of ``learn -x``: the command ends there (exit 143), not
    after the fold's fit has kept its weights and the next folds have trained."""
    data = _random_data(tmp_path / "big.txt", 1500, 3000, seed=1)
    seen, out, err, returncode = _sigterm_at_first_epoch(  # the first fold is training
        ["-x", "-g", "40", "-p", "epsilon=0", "-p", "max_iterations=100000", str(data)])
    assert returncode == 143, out + err
    assert "Cross validation (2/40)" not in seen + out
    assert err.strip().endswith("terminated; no output written"), err


@pytest.mark.parametrize("argv", [["--help"], ["--version"], [], ["nope"]])
def test_the_listing_imports_no_command(argv):
    """``crfsdca --help``, ``--version`` and a usage error read the commands' help lines,
    not their modules (which bring numba, h5py and the solvers)."""
    probe = ("import sys; from crfsdca.cli import main; code = main(sys.argv[1:]); "
             "print(sorted(m for m in sys.modules if m.startswith('crfsdca.cli.') "
             "or m == 'numba'), file=sys.stderr); sys.exit(code)")
    done = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True,
                          text=True)
    assert done.returncode == (0 if argv[:1] in (["--help"], ["--version"]) else 2)
    assert done.stderr.strip().splitlines()[-1] == "[]"
    if argv == ["--help"]:
        from crfsdca.cli import COMMANDS

        for name, help_line in COMMANDS.items():
            assert f"  {name}" in done.stdout and help_line.split()[0] in done.stdout


def test_tag_scores_a_file_without_attributes(data_file, tmp_path, capsys):
    """Items that name no attribute of the model (here none at all): @score is the path's
    bias and transition weights (the fuzzer's case: a traceback, from numpy's bincount of
    no entry, which is an int64 array)."""
    model = tmp_path / "m.model"
    assert main(["learn", "-q", "-m", str(model), str(data_file)]) == 0
    labels = load_model(model).labels
    data = tmp_path / "bare.txt"
    data.write_text(f"{labels[0]}\n{labels[1]}\tunknown\n\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["tag", "-m", str(model), "-p", str(data)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("@score\t") and out[1].startswith("@probability\t"), out
    assert len(out) == 5 and out[2] in labels and out[3] in labels, out
