"""The verdict as Markdown for a pull-request comment: at most ``MAX_LINES`` lines.

The decision first (PASS/FAIL and why), then the figures a reviewer asks for (sides,
speed with its interval, quality checks), then what differs between the sides. Long
lists are cut with a count of what was left out, and sections the verdict gains later
get one line each pointing to the HTML report.
"""

from __future__ import annotations

from typing import Any

from parity.report.terminal import fmt_bytes, fmt_rate, fmt_s
from parity.schemas import VERDICT_CORE

MAX_LINES = 60
MAX_ITEMS = 6
ROLES = ("baseline", "target")
KNOWN = VERDICT_CORE


def cell(value: Any) -> str:
    """Text safe inside a Markdown table cell: one line, no bare pipes."""
    return " ".join(str(value).split()).replace("|", "\\|")


def mark(passed: Any) -> str:
    return "info" if passed is None else ("PASS" if passed else "**FAIL**")


def _cut(items: list[str], limit: int = MAX_ITEMS) -> list[str]:
    if len(items) <= limit:
        return items
    return [*items[: limit - 1], f"- ... and {len(items) - limit + 1} more"]


def render_markdown(v: dict[str, Any], *, html_name: str | None = None) -> str:
    sides = v.get("sides") or {}
    side: dict[str, dict[str, Any]] = {
        r: sides[r] if isinstance(sides.get(r), dict) else {} for r in ROLES
    }
    w = v.get("workload") or {}
    passed = bool(v.get("passed"))
    title = "PASS: the target passes every gate" if passed else "FAIL: the target fails a gate"
    spec = {r: f"`{cell(side[r].get('spec', '?'))}`" for r in ROLES}
    fair = v.get("fairness") or {}
    fp = str(w.get("fingerprint") or "")[:12]
    match = "same frozen workload" if fair.get("fingerprint_match") else "workloads differ"
    if fair.get("verified") is False:  # script mode
        match = str(fair.get("note"))
    lines = [
        f"### parity: {title}",
        "",
        f"**{cell(w.get('name'))}** ({cell(w.get('size'))}, {cell(w.get('kind'))}): baseline "
        f"{spec['baseline']} against target {spec['target']}; fingerprint `{fp}` ({match})",
        "",
        f"| | baseline {spec['baseline']} | target {spec['target']} |",
        "|---|---:|---:|",
    ]

    def row(label: str, values: list[str]) -> None:
        lines.append(f"| {label} | {cell(values[0])} | {cell(values[1])} |")

    row(
        "status",
        [
            f"{side[r].get('status', '-')} ({side[r].get('repeats_ok', '-')}/"
            f"{side[r].get('repeats', '-')} repeats)"
            for r in ROLES
        ],
    )
    row("device", [side[r].get("device_name") or "-" for r in ROLES])
    row("median step (steady)", [fmt_s(side[r].get("median_step_s")) for r in ROLES])
    for key, unit in (("samples_per_s", "samples"), ("tokens_per_s", "tokens")):
        values = [(side[r].get("throughput") or {}).get(key) for r in ROLES]
        if any(x is not None for x in values):
            row(f"throughput ({unit})", [fmt_rate(x, unit) for x in values])
    for section, key, label in (
        ("generation", "ttft_s", "TTFT p50 / p99"),
        ("generation", "tpot_s", "TPOT p50 / p99"),
        ("inference", "latency_s", "latency p50 / p99"),
    ):
        pcts = [((side[r].get(section) or {}).get(key) or {}) for r in ROLES]
        if any(pcts):
            row(label, [f"{fmt_s(p.get('p50'))} / {fmt_s(p.get('p99'))}" for p in pcts])
    mem = v.get("memory") or {}
    rss = [((mem.get(r) or {}).get("steps") or {}).get("host_peak_rss") for r in ROLES]
    if any(x is not None for x in rss):
        row("host peak RSS", [fmt_bytes(x) for x in rss])
    lines.append("")

    speed = v.get("speed")
    if isinstance(speed, dict) and isinstance(speed.get("ratio"), int | float):
        ci = speed.get("interval") or {}
        try:
            interval = f" [{ci['low']:.3f}, {ci['high']:.3f}] ({ci['confidence']:.0%} interval)"
        except (KeyError, TypeError, ValueError):
            interval = ""
        lines.append(
            f"**Speed**: target/baseline step time {speed['ratio']:.3f}{interval}, speedup "
            f"{speed.get('speedup', 0):.2f}x: **{cell(speed.get('verdict'))}**"
        )
        if speed.get("reliable") is False:
            lines.append(
                "> unreliable: "
                + cell(", ".join(speed.get("unreliable_because") or []))
                + " failed; rerun on an idle machine"
            )
        if speed.get("note"):
            lines.append(f"> {cell(speed['note'])}")
    else:
        lines.append("**Speed**: no verdict (a side failed or gave no steady-state samples)")
    lines.append("")

    lines.append("**Gates**")
    lines += _cut(
        [
            f"- {mark(g.get('passed'))} {cell(g.get('name'))}: {cell(g.get('detail', ''))}"
            for g in v.get("gates") or []
        ]
    )
    for role in ROLES:
        if side[role].get("status") not in (None, "ok"):
            lines.append(f"- {role} failed: {cell(side[role].get('reason'))}")
    checks = (v.get("quality") or {}).get("checks") or []
    if checks:
        lines += ["", "**Quality** (target against baseline)"]
        lines += _cut(
            [f"- {mark(c.get('passed'))} {cell(c.get('name'))}: {cell(_figure(c))}" for c in checks]
        )

    changes = [
        f"- {cell(d.get('setting'))}: {cell(d.get('baseline'))} -> {cell(d.get('target'))}"
        for d in v.get("config_differences") or []
    ]
    changes += [
        f"- {cell(f)} differs, allowed: {cell(r)}" for f, r in (fair.get("allowed") or {}).items()
    ]
    if changes:
        lines += ["", "**Configuration changes**", *_cut(changes)]
    env = [
        f"- {cell(d.get('field'))}: {cell(d.get('baseline'))} -> {cell(d.get('target'))}"
        for d in v.get("environment_differences") or []
    ]
    if env:
        lines += ["", "**Environment differences**", *_cut(env, 4)]
    warnings = [
        f"- {role}: {cell(x)}" for role in ROLES for x in side[role].get("noise_warnings") or []
    ]
    if warnings:
        lines += ["", "**Warnings**", *_cut(warnings, 3)]
    later = [k for k in v if k not in KNOWN]
    if later:
        where = f"`{html_name}`" if html_name else "the HTML report (`parity report`)"
        lines += ["", "**Also in the verdict**: " + ", ".join(later) + f": see {where}"]
    footer = "<sub>parity"
    if html_name:
        footer += f" · full report with plots: `{html_name}`"
    lines += ["", footer + "</sub>"]
    if len(lines) > MAX_LINES:
        lines = [
            *lines[: MAX_LINES - 2],
            "",
            "<sub>... cut to fit a comment; see verdict.json</sub>",
        ]
    return "\n".join(lines) + "\n"


def _figure(c: dict[str, Any]) -> str:
    try:
        if c.get("kind") == "loss" and "final_rel" in c:
            return (
                f"final loss rel. difference {c['final_rel']:.2e} (tolerance {c['tolerance']:.0e})"
            )
        if c.get("kind") == "output" and "rel_rmse" in c:
            return f"rel RMSE {c['rel_rmse']:.2e} (tolerance {c['tolerance']:.0e})"
        if c.get("kind") == "tokens" and "agreement" in c:
            return f"{c['agreement']:.0%} of tokens agree (not gated)"
    except (KeyError, TypeError, ValueError):
        pass
    return str(c.get("detail", ""))
