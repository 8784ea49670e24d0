"""parity against a peer tool, optimum-benchmark 0.6.0, on one tiny GPT-2 generation workload.

The workload, the same for both tools: a GPT-2 of 2 layers, width 64, 4 heads, a vocabulary
of 512 and 256 positions (parity's ``hf:gpt2`` tiny sizes, with room for 128 + 32
positions; bos/eos id 511), its weights from ``torch.manual_seed(0)``, saved with
``save_pretrained`` (safetensors, no tokenizer: both tools feed token ids); greedy decoding
with the key/value cache, batch 1, 128 prompt tokens, exactly 32 new tokens, on the CPU with
torch's default thread count, fp32, eager. Nothing is downloaded: both tools run with
``HF_HUB_OFFLINE=1`` and ``TRANSFORMERS_OFFLINE=1``.

- **optimum-benchmark 0.6.0** in a virtual environment of its own (made by this script and
  reused once marked complete: ``optimum-benchmark==0.6.0``, ``transformers<5``,
  ``datasets<4.3``, ``torch==2.13.0``, the CPU build). Its CLI, ``optimum-benchmark
  --config-dir DIR --config-name peer_gpt2``, with the ``pytorch`` backend (device cpu, the
  model's directory; library, task and model type given, so nothing is looked up on the
  Hub), the ``inference`` scenario (latency on, memory off; ``input_shapes`` batch_size 1,
  sequence_length 128; ``generate_kwargs`` min = max new tokens 32; its defaults otherwise:
  10 warm-up generations, then generations until at least 10 and at least 10 s), run
  twice: with its default ``process`` launcher (one isolated process; its parent
  busy-waits on a core while the child measures) and with the ``inline`` launcher (the
  measuring in the CLI's own process). One side: it measures one configuration.
  Figures from its ``benchmark.json``: per target (generate, prefill, decode, per_token)
  count, mean, p50, p90, p99 and stdev (absolute and % of the mean); the script also
  searches the report for any interval or confidence field and says what it found.
- **parity**, at the same number of generations as optimum-benchmark's process-launcher
  run and on the same code path (transformers' own ``generate()``): ``parity compare
  hf:MODEL --task generate --size small --batch-size 1 --seq-len 128 --baseline cpu
  --target TARGET --generate-loop hf --repeats R --steps S``, with R processes a side
  (``--repeats``, default 4, at least 3: fewer give a provisional interval) and S the
  fewest generations per process for which the 2 x R x S generations parity runs in all
  (each process's first, its warm-up, included) are at least as many as the peer timed
  (its 10 warm-ups not counted); everything else at its defaults (the fp64 reference,
  the op scan, both compliance runs, the HTML report). parity always compares two sides;
  the default target is ``cpu`` as well (an A/A comparison: both sides are
  optimum-benchmark's one configuration, so the latency figures compare directly, and
  the interval is the precision with which this run could tell a real difference).
  ``--target cpu+threads=1`` asks a real question instead. Figures from its
  ``verdict.json``: per side TTFT, TPOT, ITL and end-to-end latency (p50, p90, mean), the
  ratio, its 95% interval and half-width, processes per side, the stop reason and the
  share of the machine other processes took.

Wall time: each tool's command from launch to exit (interpreter start, imports, loading,
warm-up, measuring, reporting), with ``time.perf_counter``; the environment's set-up and
making the checkpoint are timed apart and not counted. The tools run one after the other
(optimum-benchmark first), never together. Beside each wall time, ``others``: the share of
the machine's CPU time (cores x wall) that processes other than the tool's took meanwhile,
from ``/proc/stat`` less the tool's own CPU time (``getrusage`` of the children); on a
shared machine a figure taken at a high share is not worth keeping.

Result: PASS when parity's wall time is at most optimum-benchmark's with its default
(process) launcher and parity gives an interval that is not provisional (at least 3
processes per side); a provisional interval (fewer processes: no estimate of
process-to-process spread) does not count. The inline run is there for the latency
figures: the process launcher's parent spins on one of the cores while its child
measures, so on a small machine its generations read slower than the same code inline.

The script deletes only what it made: a ``--venv`` directory that exists and was not
made by it (no ``MADE`` marker inside) is refused, never replaced.

    python benchmarks/peer_optimum.py [--quick] [--venv DIR] [--target SIDE] [--repeats R]
                                      [--cold] [--keep DIR]

``--cold`` runs parity with a new, empty cache (``PARITY_CACHE_DIR`` in the work
directory): a new user's first comparison, with the workload frozen, the fp64 reference
run and the op scan's compile probes run, none of them found from an earlier run. Without
it, parity's cache is the user's own: warm where an earlier run froze the same workload
(the same checkpoint bytes and generations per process).

``--quick`` (a smoke run of both tools, figures not to judge by): optimum-benchmark with 1
warm-up and 2 generations, no minimum duration; parity with 3 steps, one process per side,
no compliance runs. ``--keep DIR`` leaves the checkpoint, optimum-benchmark's outputs and
parity's bundles in a new directory.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import load_line, table

PEER = "optimum-benchmark"
PINS = ("optimum-benchmark==0.6.0", "transformers<5", "datasets<4.3", "torch==2.13.0")
DEFAULT_VENV = Path.home() / ".cache" / "parity-bench" / "optimum-venv"
MARK = ".parity-bench-complete"
#: written into the venv right after this script made it: what it may delete
MADE = ".parity-bench-made"
LAUNCHERS = ("process", "inline")
BATCH, PROMPT, NEW_TOKENS = 1, 128, 32
GPT2 = {
    "n_layer": 2,
    "n_embd": 64,
    "n_head": 4,
    "n_positions": 256,
    "vocab_size": 512,
    "bos_token_id": 511,
    "eos_token_id": 511,
    "resid_pdrop": 0.0,
    "embd_pdrop": 0.0,
    "attn_pdrop": 0.0,
}
MAKE_MODEL = """\
import json, sys, torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
GPT2LMHeadModel(GPT2Config(**json.loads(sys.argv[2]))).save_pretrained(sys.argv[1])
"""
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
OB_TARGETS = ("generate", "prefill", "decode", "per_token")
INTERVAL_WORDS = ("interval", "confidence", "ci_", "_ci", "lower", "upper")


def env() -> dict[str, str]:
    """This process's environment, offline, without a PYTHONPATH that could leak across."""
    found = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**found, **OFFLINE}


def busy_cpu_s() -> float | None:
    """CPU seconds the whole machine has been busy since boot (``/proc/stat``), if known."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
    except OSError:
        return None
    ticks = [int(f) for f in fields]
    idle = ticks[3] + (ticks[4] if len(ticks) > 4 else 0)  # idle + iowait
    guest = sum(ticks[8:10])  # counted in user and nice already
    return (sum(ticks) - idle - guest) / os.sysconf("SC_CLK_TCK")


def children_cpu_s() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


@dataclass
class Timed:
    wall: float
    rc: int
    #: share of the machine's CPU time that other processes took meanwhile, if known
    others: float | None


def run_logged(
    argv: list[str], log: Path, cwd: Path | None = None, extra: dict[str, str] | None = None
) -> Timed:
    """Run a command with stdout and stderr to ``log``: its wall time, exit code and the
    share of the machine that processes other than it (and its children) took."""
    with log.open("w") as out:
        busy0, own0 = busy_cpu_s(), children_cpu_s()
        t0 = time.perf_counter()
        done = subprocess.run(
            argv, cwd=cwd, env={**env(), **(extra or {})}, stdout=out, stderr=subprocess.STDOUT
        )
        wall = time.perf_counter() - t0
        busy1, own = busy_cpu_s(), children_cpu_s() - own0
    others = None
    if busy0 is not None and busy1 is not None:
        others = max(0.0, busy1 - busy0 - own) / (wall * (os.cpu_count() or 1))
    return Timed(wall, done.returncode, others)


def tail(log: Path, lines: int = 15) -> str:
    return "\n".join(log.read_text(errors="replace").splitlines()[-lines:])


def ensure_venv(venv: Path) -> tuple[float, str]:
    """optimum-benchmark's environment: reused when marked complete with these pins, else
    made anew. (seconds, what happened)."""
    mark = venv / MARK
    wanted = json.dumps(list(PINS))
    if mark.is_file() and mark.read_text() == wanted:
        return 0.0, "reused"
    if venv.exists() or venv.is_symlink():
        if venv.is_symlink() or not (venv / MADE).is_file():
            raise SystemExit(
                f"{venv} exists and was not made by this script: pass another --venv "
                "(a new path, or one this script made)"
            )
        shutil.rmtree(venv)  # an incomplete or differently pinned one of ours
    venv.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    (venv / MADE).write_text("made by benchmarks/peer_optimum.py\n")
    log = venv / "pip-install.log"
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--disable-pip-version-check"]
    if run_logged([*pip, *PINS], log).rc != 0:
        raise SystemExit(f"pip install {' '.join(PINS)} failed ({log}):\n{tail(log)}")
    mark.write_text(wanted)
    return time.perf_counter() - t0, "made"


OB_CONFIG = """\
defaults:
  - benchmark
  - scenario: inference
  - launcher: {launcher}
  - backend: pytorch
  - _self_

name: peer_gpt2

backend:
  device: cpu
  model: {model}
  library: transformers
  task: text-generation
  model_type: gpt2

scenario:
  latency: true
  memory: false
  input_shapes:
    batch_size: {batch}
    sequence_length: {prompt}
  generate_kwargs:
    max_new_tokens: {new}
    min_new_tokens: {new}
{quick}
hydra:
  run:
    dir: {out}
  job:
    chdir: true
"""
OB_QUICK = "  warmup_runs: 1\n  iterations: 2\n  duration: 0\n"


def run_optimum(venv: Path, model: Path, work: Path, quick: bool, launcher: str) -> dict[str, Any]:
    """optimum-benchmark's CLI with ``launcher``, wall-timed; its benchmark.json."""
    conf = work / f"optimum-config-{launcher}"
    conf.mkdir()
    out = work / f"optimum-{launcher}"
    (conf / "peer_gpt2.yaml").write_text(
        OB_CONFIG.format(
            launcher=launcher,
            model=model,
            batch=BATCH,
            prompt=PROMPT,
            new=NEW_TOKENS,
            quick=OB_QUICK if quick else "",
            out=out,
        )
    )
    log = work / f"optimum-{launcher}.log"
    argv = [str(venv / "bin" / "optimum-benchmark"), "--config-dir", str(conf)]
    ran = run_logged([*argv, "--config-name", "peer_gpt2"], log, cwd=work)
    found = out / "benchmark.json"
    if ran.rc == 0 and found.is_file():
        bench: dict[str, Any] = json.loads(found.read_text())
        return {"ran": ran, "report": bench["report"], "note": None}
    # 0.6.0's inline launcher measures, writes benchmark_report.json, then fails to write
    # benchmark.json (a logits processor it put into the config is not JSON)
    measured = out / "benchmark_report.json"
    if not measured.is_file():
        raise SystemExit(f"{PEER} exited {ran.rc} ({log}):\n{tail(log)}")
    last = tail(log, 40).splitlines()
    error = next((line for line in reversed(last) if "Error" in line), "?")
    note = f"exited {ran.rc} after writing benchmark_report.json ({error.strip()})"
    return {"ran": ran, "report": json.loads(measured.read_text()), "note": note}


def interval_fields(tree: Any, path: str = "") -> list[str]:
    """Every key in the report whose name speaks of an interval or a confidence level."""
    hits: list[str] = []
    if isinstance(tree, dict):
        for key, value in tree.items():
            here = f"{path}.{key}" if path else str(key)
            if any(word in str(key).lower() for word in INTERVAL_WORDS):
                hits.append(here)
            hits += interval_fields(value, here)
    return hits


def parity_steps(generations: int, repeats: int) -> int:
    """Generations per parity process: the fewest for which two sides of ``repeats``
    processes run at least ``generations`` in all (each process's warm-up included)."""
    return max(2, math.ceil(generations / (2 * repeats)))


def run_parity(
    model: Path, work: Path, target: str, quick: bool, repeats: int, steps: int, cold: bool
) -> dict[str, Any]:
    """``parity compare`` on the checkpoint, wall-timed; its verdict.json."""
    out = work / "parity"
    argv = [sys.executable, "-m", "parity", "compare", f"hf:{model}", "--task", "generate"]
    argv += ["--size", "small", "--batch-size", str(BATCH), "--seq-len", str(PROMPT)]
    argv += ["--baseline", "cpu", "--target", target, "--out", str(out)]
    argv += ["--generate-loop", "hf"]
    if quick:
        argv += ["--steps", "3", "--repeats", "1", "--no-compliance"]
    else:
        argv += ["--steps", str(steps), "--repeats", str(repeats)]
    log = work / "parity.log"
    # --cold: a cache of its own, new and empty (a new user's first comparison: nothing
    # frozen, no fp64 reference, no probe run before)
    extra = {"PARITY_CACHE_DIR": str(work / "parity-cache")} if cold else None
    ran = run_logged(argv, log, cwd=work, extra=extra)
    found = out / "verdict.json"
    if ran.rc not in (0, 1) or not found.is_file():
        raise SystemExit(f"parity exited {ran.rc} ({log}):\n{tail(log)}")
    verdict: dict[str, Any] = json.loads(found.read_text())
    new = verdict["workload"]["description"]["config"].get("new_tokens")
    if new != NEW_TOKENS:
        raise SystemExit(f"parity decoded {new} new tokens, not {NEW_TOKENS}: see {found}")
    if verdict.get("speed") is None:
        raise SystemExit(f"parity gave no speed section (a side failed?): see {found}")
    return {"ran": ran, "verdict": verdict, "spent": parity_breakdown(out)}


def parity_breakdown(out: Path) -> dict[str, float]:
    """Seconds inside parity's worker processes, from their ``events.jsonl`` (first event
    to ``done``): the fp64 reference, the measured processes, the compliance runs, and the
    op scans within the measured ones."""
    spent = {"reference": 0.0, "measured": 0.0, "compliance": 0.0, "scan": 0.0}
    for events in sorted(out.rglob("events.jsonl")):
        rel = events.relative_to(out).parts
        phases: dict[str, int] = {}
        first = None
        for line in events.read_text().splitlines():
            event = json.loads(line)
            first = event["t_ns"] if first is None else first
            if event.get("event") == "phase":
                phases[event["phase"]] = event["t_ns"]
        if first is None or "done" not in phases:
            continue
        took = (phases["done"] - first) / 1e9
        if rel[0] == "reference":
            spent["reference"] += took
        elif rel[1].startswith("r") and rel[1][1:].isdigit():
            spent["measured"] += took
            if "scan" in phases:
                spent["scan"] += (phases["done"] - phases["scan"]) / 1e9
        else:
            spent["compliance"] += took
    return spent


def share_text(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def ms(seconds: float | None) -> str:
    if seconds is None or (isinstance(seconds, float) and math.isnan(seconds)):
        return "-"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def optimum_rows(report: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for name in OB_TARGETS:
        lat = (report.get(name) or {}).get("latency")
        if not lat:
            continue
        rows.append(
            (
                name,
                str(lat["count"]),
                ms(lat["mean"]),
                ms(lat["p50"]),
                ms(lat["p90"]),
                ms(lat["p99"]),
                f"{ms(lat['stdev'])} ({lat['stdev_']:.1f}%)",
            )
        )
    return rows


def _spec(info: dict[str, Any]) -> str:
    """A side as written (``cpu+bf16``): the verdict's typed side, or an older ``spec``."""
    side = info.get("side")
    return str(side.get("spec") if isinstance(side, dict) else side or info.get("spec"))


def parity_rows(verdict: dict[str, Any]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for side in ("baseline", "target"):
        info = verdict["sides"][side]
        gen = info.get("generation") or {}
        for key, label in (("e2e_s", "end to end"), ("ttft_s", "TTFT"), ("tpot_s", "TPOT")):
            got = gen.get(key)
            if got:
                rows.append(
                    (
                        f"{side} {_spec(info)}: {label}",
                        str(got["n"]),
                        ms(got["mean"]),
                        ms(got["p50"]),
                        ms(got["p90"]),
                        ms(got["p99"]),
                    )
                )
    return rows


def generation_count(report: dict[str, Any]) -> int:
    return int(((report.get("generate") or {}).get("latency") or {}).get("count") or 0)


def optimum_row(name: str, run: dict[str, Any]) -> tuple[str, ...]:
    report, ran = run["report"], run["ran"]
    gen = (report.get("generate") or {}).get("latency") or {}
    fields = interval_fields(report)
    return (
        name,
        f"{ran.wall:.1f}",
        share_text(ran.others),
        f"generate mean {ms(gen.get('mean'))}, p50 {ms(gen.get('p50'))}, "
        f"stdev {gen.get('stdev_', float('nan')):.1f}% ({gen.get('count')} timed)",
        "no" if not fields else f"fields: {', '.join(fields)}",
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a short smoke run of both tools")
    parser.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="optimum-benchmark's venv")
    parser.add_argument("--target", default="cpu", help="parity's target side (default: cpu)")
    parser.add_argument(
        "--repeats", type=int, default=4, help="parity's processes per side (default 4, >= 3)"
    )
    parser.add_argument("--keep", type=Path, help="keep every output under this new directory")
    parser.add_argument(
        "--cold",
        action="store_true",
        help="parity with a new, empty cache (nothing frozen, no reference, no probe cached)",
    )
    args = parser.parse_args()
    if args.repeats < 3 and not args.quick:
        parser.error("--repeats: at least 3 (fewer give a provisional interval)")
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: exists; name a new directory")

    print(f"peer_optimum: {time.strftime('%Y-%m-%d %H:%M:%S')}, {load_line()}")
    setup_s, how = ensure_venv(args.venv.expanduser())
    print(f"{PEER} environment {args.venv} {how} ({setup_s:.1f} s, not counted): {', '.join(PINS)}")
    with tempfile.TemporaryDirectory(prefix="parity-peer-") as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=args.keep is None)
        model = (work / "gpt2-tiny").resolve()
        python = str(args.venv.expanduser() / "bin" / "python")
        t0 = time.perf_counter()
        subprocess.run([python, "-c", MAKE_MODEL, str(model), json.dumps(GPT2)], check=True)
        print(f"checkpoint {model} made in {time.perf_counter() - t0:.1f} s (not counted)")
        print(
            f"workload: GPT-2 {GPT2['n_layer']} layers x {GPT2['n_embd']}, greedy, batch {BATCH}, "
            f"{PROMPT} prompt tokens, {NEW_TOKENS} new tokens, cpu fp32 eager"
        )
        ob: dict[str, dict[str, Any]] = {}
        for launcher in LAUNCHERS:
            print(f"running {PEER}, launcher {launcher} ...  ({load_line()})", flush=True)
            ob[launcher] = run_optimum(args.venv.expanduser(), model, work, args.quick, launcher)
            if ob[launcher]["note"]:
                print(f"{PEER} ({launcher}) {ob[launcher]['note']}")
        generations = generation_count(ob["process"]["report"])
        steps = parity_steps(generations, args.repeats)
        print(
            f"running parity compare --baseline cpu --target {args.target} --generate-loop hf "
            f"--repeats {args.repeats} --steps {steps} ({2 * args.repeats * steps} generations "
            f"in all, for {PEER}'s {generations} timed; cache "
            f"{'new and empty' if args.cold else 'as found'}) ...  ({load_line()})",
            flush=True,
        )
        pa = run_parity(model, work, args.target, args.quick, args.repeats, steps, args.cold)

    verdict, pa_ran = pa["verdict"], pa["ran"]
    speed = verdict["speed"]
    interval = speed["interval"]
    stop = speed.get("stop") or {}
    half = float(interval["half_width_rel"])
    provisional = bool(interval.get("provisional"))
    base = verdict["sides"]["baseline"]["generation"]
    targ = verdict["sides"]["target"]["generation"]
    procs = f"{speed['repeats']['baseline']}/{speed['repeats']['target']}"
    print()
    print(
        table(
            ("tool", "wall s", "others", "latency figures", "interval"),
            [
                *(optimum_row(f"{PEER} ({launcher})", ob[launcher]) for launcher in LAUNCHERS),
                (
                    f"parity (cpu vs {args.target})",
                    f"{pa_ran.wall:.1f}",
                    share_text(pa_ran.others),
                    f"e2e p50 {ms(base['e2e_s']['p50'])} / {ms(targ['e2e_s']['p50'])}, "
                    f"TTFT p50 {ms(base['ttft_s']['p50'])} / {ms(targ['ttft_s']['p50'])}, "
                    f"TPOT p50 {ms(base['tpot_s']['p50'])} / {ms(targ['tpot_s']['p50'])}",
                    f"yes{' (provisional)' if provisional else ''}: ±{half:.2%}",
                ),
            ],
        )
    )
    print(
        "others: the share of the machine's CPU time that other processes took during the "
        "tool's run (/proc/stat, less the tool's own processes)"
    )
    for launcher in LAUNCHERS:
        report = ob[launcher]["report"]
        print()
        print(f"{PEER}, launcher {launcher}: latency per target ({PEER}'s own figures)")
        print(table(("target", "n", "mean", "p50", "p90", "p99", "stdev"), optimum_rows(report)))
        decode = (report.get("decode") or {}).get("throughput") or {}
        if decode:
            print(f"decode throughput {decode['value']:.1f} {decode['unit']}")
        per_token = (report.get("per_token") or {}).get("latency") or {}
        count = generation_count(report)
        gaps = count * (NEW_TOKENS - 1)
        if per_token and per_token["count"] != gaps:
            print(
                f"per_token holds {per_token['count']} samples for {count} generations of "
                f"{NEW_TOKENS} tokens ({gaps} gaps between tokens): not one sample per gap"
            )
    ob_fields = interval_fields(ob["process"]["report"])
    print(
        f"interval or confidence fields in its report: {', '.join(ob_fields) or 'none'} "
        f"(each latency gives count, total, mean, p50, p90, p95, p99, stdev, stdev_ and the values)"
    )
    print()
    print(f"parity: per side, the steady steps of every process ({procs} processes per side)")
    print(table(("side: figure", "n", "mean", "p50", "p90", "p99"), parity_rows(verdict)))
    for launcher in LAUNCHERS:
        mean = ((ob[launcher]["report"].get("generate") or {}).get("latency") or {}).get("mean")
        if mean and base.get("e2e_s"):
            print(
                f"parity's baseline end-to-end mean / {PEER} {launcher}'s generate mean: "
                f"{base['e2e_s']['mean'] / mean:.3f}"
            )
    share = (stop.get("interference") or {}).get("share")
    print(
        f"ratio target/baseline {speed['ratio']:.4f}, 95% interval "
        f"[{interval['low']:.4f}, {interval['high']:.4f}], ±{half:.2%}"
        f"{' provisional' if provisional else ''}; verdict {speed['verdict']}; "
        f"stop {stop.get('reason', '-')}"
        + (f"; other processes took {share:.0%} of the machine" if share is not None else "")
    )
    if stop.get("message"):
        print(f"stop: {stop['message']}")
    spent = pa["spent"]
    inside = spent["reference"] + spent["measured"] + spent["compliance"]
    print(
        f"parity's {pa_ran.wall:.1f} s: fp64 reference {spent['reference']:.1f} s, measured "
        f"processes {spent['measured']:.1f} s (their op scans {spent['scan']:.1f} s), compliance "
        f"runs {spent['compliance']:.1f} s, the rest {pa_ran.wall - inside:.1f} s (imports, "
        "freezing the workload, starting workers, judging, the report)"
    )
    print(f"parity exit code {pa_ran.rc}")
    print(f"after: {load_line()}")

    peer_wall = ob["process"]["ran"].wall
    ok = pa_ran.wall <= peer_wall and not provisional
    print(
        f"RESULT: peer_optimum parity {pa_ran.wall:.1f}s ±{half:.2%}"
        f"{' (provisional)' if provisional else ''} vs {PEER} {peer_wall:.1f}s (process "
        f"launcher; inline {ob['inline']['ran'].wall:.1f}s; "
        f"{'no interval' if not ob_fields else 'interval fields: ' + ', '.join(ob_fields)}) "
        f"{'PASS' if ok else 'FAIL'}"
    )


if __name__ == "__main__":
    main()
