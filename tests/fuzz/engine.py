"""Worker processes that run the targets on mutated inputs, and the supervisor that keeps
what goes wrong.

A worker takes the targets in turn, a block of inputs each; every input is a mutation of
one of the target's corpus entries (its seeds, then the inputs whose answer was new: a
new signature of :func:`fuzz.targets.run_one`). It runs under a limit on its address
space (``max_memory`` above what it holds once its targets have run their seeds), and an
alarm per input (``timeout``). It reports on standard output, one JSON object a line:
progress, and each :class:`~fuzz.targets.Finding` with its input.

The supervisor starts ``jobs`` workers, gives each its share of the inputs, and keeps the
input of a worker that dies (a crash) or stops reporting (a hang), then starts it again
on what is left of its share.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import random
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from crfsdca.runtime import isolated, memory

from .mutate import mutate
from .seeds import make_seeds
from .targets import LIBHDF5, TARGETS, Context, Finding, run_one

SCRATCH = "/dev/shm"
"""Where the workers write their inputs, if it is there: memory (a file written on this
machine's disk took 5 ms, in memory 0.01 ms)."""
PROGRESS = 300.0
"""Seconds between the supervisor's progress lines."""
CORPUS_LIMIT = 400
"""Corpus entries kept per target (seeds, then inputs with a new answer)."""


class Hang(BaseException):
    """An input ran past the alarm (a BaseException: no reader's handler takes it)."""


def _on_alarm(signum, frame):
    raise Hang()


def _say(**message) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def work(names: list[str], seeds_dir: Path, count: int, seed: int, work_dir: Path,
         timeout: float, max_memory: int) -> None:
    """Run ``count`` inputs over the targets ``names``, reporting as the module says."""
    # a header-less HDF5 file that makes libhdf5 loop is refused once the child of
    # runtime.isolated has waited SECONDS: less than the alarm, so that the refusal (the
    # right answer) comes before the alarm would call it a hang
    isolated.SECONDS = min(isolated.SECONDS, timeout / 2)
    context = Context(make_seeds(seeds_dir))
    rng = random.Random(seed)
    work_dir.mkdir(parents=True, exist_ok=True)
    path = work_dir / "input"
    targets = [{**TARGETS, LIBHDF5.name: LIBHDF5}[n] for n in names]
    corpus = {t.name: [p.read_bytes() for p in context.seeds[t.seeds]] for t in targets}
    answers: dict[str, set[str]] = {t.name: set() for t in targets}
    limits = {t.name: 4 * max(map(len, corpus[t.name])) for t in targets}
    signal.signal(signal.SIGALRM, _on_alarm)

    def one(target, data: bytes) -> None:
        signal.setitimer(signal.ITIMER_REAL, timeout)
        try:
            answer = run_one(target, data, path, context)
        except Finding as f:
            _say(finding=f.kind, target=target.name, message=str(f)[:2000],
                 data=base64.b64encode(data).decode())
            return
        except Hang:
            _say(finding="hang", target=target.name, message=f"over {timeout} s",
                 data=base64.b64encode(data).decode())
            return
        except MemoryError:
            _say(finding="memory", target=target.name,
                 message=f"allocated past {max_memory:,} bytes",
                 data=base64.b64encode(data).decode())
            return
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
        if answer not in answers[target.name]:
            answers[target.name].add(answer)
            entries = corpus[target.name]
            if len(entries) < CORPUS_LIMIT:
                entries.append(data)
            else:
                entries[rng.randrange(len(context.seeds[target.seeds]), CORPUS_LIMIT)] = data

    done = 0
    for target in targets:  # the seeds first: they load (kernels compiled before the limit)
        _say(target=target.name, done=done)
        for data in list(corpus[target.name]):
            one(target, data)
            done += 1
    memory.limit_address_space(max_memory)
    last = time.monotonic()
    turn = 0
    while done < count:
        turn += 1
        for target in (t for t in targets if turn % t.every == 0):
            _say(target=target.name, done=done)
            for _ in range(min(target.block, count - done)):
                entries = corpus[target.name]
                one(target, mutate(rng, rng.choice(entries), entries, limits[target.name]))
                done += 1
                if time.monotonic() - last > 0.5:
                    _say(done=done)
                    last = time.monotonic()
            if done >= count:
                break
    _say(done=done, answers={k: len(v) for k, v in answers.items()}, end=True)


@dataclass
class Worker:
    """A worker process, its share, and where it is."""

    index: int
    share: int
    seed: int
    done: int = 0
    base: int = 0  # inputs done before the process now running started
    target: str = ""
    process: subprocess.Popen | None = None
    last: float = 0.0
    starts: int = 0
    answers: dict = field(default_factory=dict)


def _keep(out: Path, kind: str, target: str, data: bytes, message: str) -> Path:
    digest = hashlib.sha1(data).hexdigest()[:12]
    folder = out / "findings" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{digest}.txt").write_text(f"{kind}: {message}\n")
    (folder / digest).write_bytes(data)
    return folder / digest


def supervise(names: list[str], inputs: int, jobs: int, out: Path, seed: int = 0,
              timeout: float = 10.0, hang: float = 60.0, max_memory: int = 2**30,
              say=print) -> dict:
    """Run ``inputs`` inputs over the targets ``names`` on ``jobs`` workers; keep what
    goes wrong under ``out/findings``. A summary: inputs run, seconds, findings."""
    out = Path(out)
    make_seeds(out / "seeds")  # once, before the workers read them
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), os.environ.get("PYTHONPATH", "")]))
    workers = [Worker(i, inputs // jobs + (i < inputs % jobs), seed * 1000 + i)
               for i in range(jobs)]
    findings: list[dict] = []
    selector = selectors.DefaultSelector()
    t0 = shown = time.monotonic()

    scratch = Path(tempfile.mkdtemp(prefix="crfsdca-fuzz-", dir=SCRATCH if os.path.isdir(
        SCRATCH) else out))

    def start(w: Worker) -> None:
        args = {"names": names, "seeds_dir": str(out / "seeds"), "count": w.share - w.done,
                "seed": w.seed + 7919 * w.starts, "work_dir": str(scratch / str(w.index)),
                "timeout": timeout, "max_memory": max_memory}
        w.process = subprocess.Popen([sys.executable, "-m", "fuzz", "--worker",
                                      json.dumps(args)], stdout=subprocess.PIPE, env=env,
                                     text=True, bufsize=1)
        w.starts += 1
        w.last = time.monotonic()
        w.base = w.done
        selector.register(w.process.stdout, selectors.EVENT_READ, w)

    def stopped(w: Worker, kind: str) -> None:
        """A worker that died or hung: its current input is the finding; start it again
        on the rest of its share."""
        selector.unregister(w.process.stdout)
        if kind == "hang":
            w.process.kill()
        status = w.process.wait()
        data = (scratch / str(w.index) / "input").read_bytes()
        message = (f"the worker died (exit status {status})" if kind == "crash"
                   else f"no answer for {hang} s")
        findings.append({"finding": kind, "target": w.target, "message": message,
                         "path": str(_keep(out, kind, w.target, data, message))})
        say(f"{w.target}: {kind} ({message})")
        w.done += 1  # the input that crashed counts
        if w.done < w.share:
            start(w)

    for w in workers:
        start(w)
    while selector.get_map():
        for key, _ in selector.select(timeout=1.0):
            w = key.data
            line = w.process.stdout.readline()
            if not line:  # the worker ended
                if w.process.wait() != 0:
                    stopped(w, "crash")
                else:
                    selector.unregister(w.process.stdout)
                continue
            w.last = time.monotonic()
            message = json.loads(line)
            w.target = message.get("target", w.target)
            if "done" in message:
                w.done = w.base + message["done"]
            if message.get("end"):
                w.answers = message["answers"]
            if "finding" in message:
                data = base64.b64decode(message.pop("data"))
                message["path"] = str(_keep(out, message["finding"], message["target"], data,
                                            message["message"]))
                findings.append(message)
                say(f"{message['target']}: {message['finding']} ({message['message'][:300]})")
        for w in workers:
            if w.process.poll() is None and time.monotonic() - w.last > hang:
                stopped(w, "hang")
        if time.monotonic() - shown > PROGRESS:
            shown = time.monotonic()
            done = sum(w.done for w in workers)
            say(f"{done:,} of {inputs:,} inputs, {done / (shown - t0):.0f}/s, "
                f"{len(findings)} finding(s)")
    seconds = time.monotonic() - t0
    shutil.rmtree(scratch, ignore_errors=True)
    summary = {"inputs": sum(w.done for w in workers), "seconds": round(seconds, 1),
               "jobs": jobs, "targets": names, "answers": [w.answers for w in workers],
               "findings": findings}
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    return summary
