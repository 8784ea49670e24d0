"""The HTML report: one self-contained file that works offline.

Sections follow the verdict's own order (``Verdict.to_dict``), so a section the verdict
gains later (``numerics``, ``cost``, ``compatibility``, ...) appears where the verdict
puts it: known sections get their tables and plots, any other is rendered generically
from its JSON. Nothing refers outside the file: styles are inline, plots are inline SVG
(``parity.report.plots``), there is no script, and the text ``http`` never appears
literally (a URL in, say, a stderr tail is written with an entity, which reads the same).
"""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Callable
from typing import Any

from parity import __version__
from parity.report import plots
from parity.report.plots import Plot
from parity.report.run import ROLES, Run
from parity.report.terminal import fmt_bytes, fmt_rate, fmt_s

HEADER_KEYS = ("passed", "exit_code", "workload", "sides")
DIFF_KEYS = ("config_differences", "environment_differences")
TITLES = {
    "fairness": "Fairness",
    "differences": "Configuration and environment differences",
    "gates": "Gates",
    "quality": "Quality",
    "speed": "Speed",
    "memory": "Memory",
    "phases": "Phases",
    "numerics": "Numerics",
    "compatibility": "Compatibility",
    "cost": "Cost",
}
MAX_DEPTH = 4
MAX_ROWS = 200

CSS = """
:root { --pass: #1e7b34; --fail: #b3261e; --info: #2f6690; --muted: #666; --line: #ddd; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  margin: 0; color: #1d1d1f; background: #fafafa; }
main { max-width: 1120px; margin: 0 auto; padding: 16px 24px 48px; }
header.banner { padding: 18px 24px; color: #fff; }
header.banner.pass { background: var(--pass); }
header.banner.fail { background: var(--fail); }
header.banner h1 { margin: 0 0 4px; font-size: 22px; }
header.banner p { margin: 0; opacity: .92; }
nav { margin: 12px 0 4px; font-size: 13px; }
nav a { margin-right: 12px; color: var(--info); text-decoration: none; }
section { background: #fff; border: 1px solid var(--line); border-radius: 8px;
  padding: 12px 18px 16px; margin: 14px 0; }
section h2 { margin: 4px 0 10px; font-size: 18px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; margin: 6px 0 10px; font-size: 13px; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px 4px 0; text-align: left;
  vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.kv th { width: 1%; white-space: nowrap; }
.badge { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px;
  font-weight: 700; color: #fff; }
.badge.pass { background: var(--pass); } .badge.fail { background: var(--fail); }
.badge.info { background: var(--info); }
.note { color: var(--muted); }
.warn { color: #8a5a00; }
.bad { color: var(--fail); font-weight: 600; }
pre { background: #f4f4f4; padding: 8px; overflow-x: auto; font-size: 12px;
  max-height: 320px; }
figure.plot { margin: 10px 0 16px; }
figure.plot svg { max-width: 100%; height: auto; display: block; }
figcaption { font-size: 12px; color: var(--muted); margin-top: 4px; }
footer { color: var(--muted); font-size: 12px; margin-top: 24px; }
code { font-size: 12px; }
"""


def esc(value: Any) -> str:
    """HTML-escaped text in which ``http`` never appears literally."""
    text = html.escape(str(value), quote=True)
    return re.sub(r"(?i)(h)(t)(tp)", lambda m: f"{m[1]}&#{ord(m[2])};{m[3]}", text)


def anchor(key: str) -> str:
    return "sec-" + re.sub(r"[^a-z0-9]+", "-", key.lower()).strip("-")


def title_of(key: str) -> str:
    return TITLES.get(key, key.replace("_", " ").capitalize())


# -- values ----------------------------------------------------------------------------


def fmt(key: str, value: Any) -> str:
    """A scalar, formatted by what its key says it is (escaped)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float):
        k = key.lower()
        if k.endswith("_per_s"):
            return esc(f"{value:,.1f}/s")
        if value == 0:
            return "0"
        if k.endswith("_s") or k.endswith("seconds"):
            return esc(fmt_s(float(value)))
        if any(w in k for w in ("rss", "allocated", "reserved", "bytes")):
            return esc(fmt_bytes(int(value)))
        if isinstance(value, float):
            return esc(f"{value:.4g}")
        return esc(f"{value:,}") if abs(value) >= 10000 else esc(value)
    return esc(value)


def generic(value: Any, key: str = "", depth: int = 0) -> str:
    """Any JSON value as nested tables: how sections parity does not know yet render."""
    if isinstance(value, dict):
        if not value:
            return '<span class="note">none</span>'
        if depth >= MAX_DEPTH:
            return f"<code>{esc(json.dumps(value)[:300])}</code>"
        rows = "".join(
            f"<tr><th>{esc(k)}</th><td>{generic(v, str(k), depth + 1)}</td></tr>"
            for k, v in value.items()
        )
        return f'<table class="kv">{rows}</table>'
    if isinstance(value, list):
        if not value:
            return '<span class="note">none</span>'
        if all(isinstance(v, dict) for v in value) and depth < MAX_DEPTH:
            columns: list[str] = []
            for row in value:
                columns += [str(k) for k in row if str(k) not in columns]
            columns = columns[:12]
            head = "".join(f"<th>{esc(c)}</th>" for c in columns)
            body = "".join(
                "<tr>"
                + "".join(f"<td>{generic(row.get(c), c, depth + 1)}</td>" for c in columns)
                + "</tr>"
                for row in value[:MAX_ROWS]
            )
            more = (
                f'<p class="note">{len(value) - MAX_ROWS} more rows in verdict.json</p>'
                if len(value) > MAX_ROWS
                else ""
            )
            return f"<table><tr>{head}</tr>{body}</table>{more}"
        if all(not isinstance(v, dict | list) for v in value):
            return ", ".join(fmt(key, v) for v in value[:MAX_ROWS])
        return f"<code>{esc(json.dumps(value)[:300])}</code>"
    return fmt(key, value)


def badge(passed: Any) -> str:
    if passed is None:
        return '<span class="badge info">info</span>'
    return (
        '<span class="badge pass">PASS</span>' if passed else '<span class="badge fail">FAIL</span>'
    )


def status_badge(status: Any) -> str:
    kind = "pass" if status == "ok" else "fail"
    return f'<span class="badge {kind}">{esc(status or "-")}</span>'


def table(head: list[str], rows: list[list[str]], numeric_from: int = 1) -> str:
    """A table from escaped cells; columns from ``numeric_from`` on are right-aligned."""
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i >= numeric_from else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{th}</tr>{body}</table>"


def figure(plot: Plot | None) -> str:
    if plot is None:
        return ""
    return (
        f'<figure class="plot" id="plot-{plot.key}" data-plot="{plot.key}" '
        f'data-points="{plot.points}">{plot.svg}'
        f"<figcaption><b>{esc(plot.title)}.</b> {esc(plot.caption)}</figcaption></figure>"
    )


def _rest(section: dict[str, Any], known: tuple[str, ...]) -> str:
    """The keys of a known section that this renderer does not know: rendered generically."""
    extra = {k: v for k, v in section.items() if k not in known}
    return f"<h3>More</h3>{generic(extra)}" if extra else ""


def _role_head(v: dict[str, Any]) -> list[str]:
    return [""] + [
        f"{role}<br><code>{esc(_side(v, role).get('spec', '?'))}</code>" for role in ROLES
    ]


def _side(v: dict[str, Any], role: str) -> dict[str, Any]:
    side = (v.get("sides") or {}).get(role)
    return side if isinstance(side, dict) else {}


# -- header ----------------------------------------------------------------------------


def header(v: dict[str, Any]) -> str:
    passed = bool(v.get("passed"))
    w = v.get("workload") or {}
    fp = str(w.get("fingerprint") or "")[:12]
    verdict = "PASS: the target passes every gate" if passed else "FAIL: the target fails a gate"
    sub = (
        f"workload {esc(w.get('name'))} ({esc(w.get('size'))}, {esc(w.get('kind'))}) · "
        f"fingerprint <code>{esc(fp)}</code> · baseline <b>{esc(_side(v, 'baseline').get('spec'))}"
        f"</b> against target <b>{esc(_side(v, 'target').get('spec'))}</b>"
    )
    return (
        f'<header class="banner {"pass" if passed else "fail"}"><h1>{esc(verdict)}</h1>'
        f"<p>{sub}</p></header>"
    )


def sides_section(v: dict[str, Any]) -> str:
    def row(label: str, get: Callable[[dict[str, Any]], str]) -> list[str]:
        return [esc(label)] + [get(_side(v, r)) for r in ROLES]

    rows = [
        row("status", lambda s: status_badge(s.get("status"))),
        row("device", lambda s: esc(s.get("device_name") or "-")),
        row("repeats ok", lambda s: esc(f"{s.get('repeats_ok', '-')}/{s.get('repeats', '-')}")),
        row("median step (steady)", lambda s: fmt("median_step_s", s.get("median_step_s"))),
    ]
    for key, unit in (("samples_per_s", "samples"), ("tokens_per_s", "tokens")):
        values = [(_side(v, r).get("throughput") or {}).get(key) for r in ROLES]
        if any(x is not None for x in values):
            rows.append([esc(f"throughput ({unit})")] + [esc(fmt_rate(x, unit)) for x in values])
    flops = [(_side(v, r).get("flops") or {}) for r in ROLES]
    if any(f.get("achieved_flops") for f in flops):
        rows.append(
            ["achieved FLOP/s"]
            + [
                esc(
                    "-"
                    if f.get("achieved_flops") is None
                    else f"{f['achieved_flops'] / 1e9:,.1f} GFLOP/s"
                )
                for f in flops
            ]
        )
        rows.append(
            ["MFU"]
            + [esc("no peak known" if f.get("mfu") is None else f"{f['mfu']:.1%}") for f in flops]
        )
    out = [f'<section id="{anchor("sides")}"><h2>Sides</h2>', table(_role_head(v), rows)]
    for role in ROLES:
        side = _side(v, role)
        if side.get("status") not in (None, "ok"):
            out.append(f'<p class="bad">{esc(role)} failed: {esc(side.get("reason"))}</p>')
            if side.get("stderr_tail"):
                out.append(f"<pre>{esc(side['stderr_tail'])}</pre>")
        for warning in side.get("noise_warnings") or []:
            out.append(f'<p class="warn">{esc(role)}: {esc(warning)}</p>')
    out.append("</section>")
    return "".join(out)


# -- known sections --------------------------------------------------------------------


def fairness(v: dict[str, Any], _: dict[str, Plot]) -> str:
    fair = v.get("fairness")
    if not isinstance(fair, dict):
        return generic(fair)
    out = []
    if fair.get("verified") is False:  # script mode: the same command, contents unseen
        out.append(
            f'<p class="warn">{esc(fair.get("note"))}: both sides ran the same command and '
            "script, but parity did not see their weights and data (contract unverified).</p>"
        )
    elif fair.get("fingerprint_match"):
        out.append(
            f"<p>{badge(True)} Both sides ran the same frozen workload: weights, data, batch "
            f"size, sequence length, steps, seed and quality checks (fingerprint "
            f"<code>{esc(fair.get('fingerprint'))}</code>).</p>"
        )
    else:
        out.append('<p class="warn">The sides ran different workloads; allowed by name:</p>')
        out.append(
            table(
                ["field", "reason given"],
                [[esc(k), esc(r)] for k, r in (fair.get("allowed") or {}).items()],
                numeric_from=9,
            )
        )
    out.append(_rest(fair, ("fingerprint_match", "fingerprint", "differing_fields", "allowed")))
    return "".join(out)


def differences(v: dict[str, Any], _: dict[str, Plot]) -> str:
    out = ["<h3>Configuration changes</h3>"]
    config = v.get("config_differences") or []
    if config:
        out.append(
            table(
                ["setting", "baseline", "target"],
                [
                    [esc(d.get("setting")), esc(d.get("baseline")), esc(d.get("target"))]
                    for d in config
                ],
                numeric_from=9,
            )
        )
    else:
        out.append('<p class="note">none: both sides ran with the same settings</p>')
    out.append("<h3>Environment differences</h3>")
    env = v.get("environment_differences") or []
    if env:
        out.append(
            table(
                ["field", "baseline", "target"],
                [
                    [esc(d.get("field")), generic(d.get("baseline")), generic(d.get("target"))]
                    for d in env
                ],
                numeric_from=9,
            )
        )
    else:
        out.append('<p class="note">none recorded</p>')
    return "".join(out)


def gates(v: dict[str, Any], _: dict[str, Plot]) -> str:
    rows = [
        [esc(g.get("name")), badge(g.get("passed")), esc(g.get("detail", ""))]
        for g in v.get("gates") or []
        if isinstance(g, dict)
    ]
    return table(["gate", "result", "detail"], rows, numeric_from=9) if rows else "none"


def _check_figure(c: dict[str, Any]) -> str:
    try:
        if c.get("kind") == "loss" and "final_rel" in c:
            return (
                f"final {c['final_baseline']:.4f} vs {c['final_target']:.4f} (rel "
                f"{c['final_rel']:.2e}, max over steps {c['max_rel']:.2e})"
            )
        if c.get("kind") == "output" and "rel_rmse" in c:
            return f"rel RMSE {c['rel_rmse']:.2e}, max abs {c['max_abs']:.2e}"
        if c.get("kind") == "tokens" and "agreement" in c:
            return f"{c['agreement']:.0%} of tokens agree"
    except (KeyError, TypeError, ValueError):
        pass
    if c.get("detail"):
        return str(c["detail"])
    skip = ("passed", "gated", "tolerance")
    figures = [f"{k} {v:.3g}" for k, v in c.items() if isinstance(v, float) and k not in skip]
    return ", ".join(figures[:4])


def quality(v: dict[str, Any], p: dict[str, Plot]) -> str:
    q = v.get("quality")
    if not isinstance(q, dict) or not q:
        return '<p class="note">not judged: a side did not run to the end</p>'
    out = [figure(p.get("loss"))]
    rows = []
    for c in q.get("checks") or []:
        tol = c.get("tolerance")
        rows.append(
            [
                esc(c.get("name")),
                badge(c.get("passed")),
                esc(_check_figure(c)),
                "-" if tol is None else esc(f"{tol:.0e}" if isinstance(tol, float) else tol),
            ]
        )
    if rows:
        out.append(table(["check", "result", "figure", "tolerance"], rows, numeric_from=9))
    if q.get("method"):
        tolerances = q.get("tolerances") or {}
        tol_text = ", ".join(
            f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in tolerances.items()
        )
        out.append(f'<p class="note">{esc(q["method"])}; tolerances: {esc(tol_text or "-")}</p>')
    det = q.get("determinism") or {}
    if det:
        det_rows = []
        for role, d in det.items():
            if not isinstance(d, dict):
                continue
            if not d.get("checked"):
                text = d.get("detail", "not checked")
            elif d.get("bitwise_equal"):
                text = "bitwise equal across two fresh processes"
            else:
                text = (
                    f"not bitwise equal: max output difference "
                    f"{d.get('max_abs_output_diff') or 0:.2e}, max loss difference "
                    f"{d.get('max_abs_loss_diff') or 0:.2e}"
                )
            det_rows.append([esc(role), esc(text)])
        out.append("<h3>Determinism</h3>" + table(["side", "result"], det_rows, numeric_from=9))
    out.append(_rest(q, ("checks", "passed", "method", "tolerances", "determinism")))
    return "".join(out)


SPEED_KNOWN = (
    "reliable",
    "unreliable_because",
    "baseline_median_s",
    "target_median_s",
    "ratio",
    "speedup",
    "interval",
    "verdict",
    "repeats",
    "stop",
    "note",
    "throughput",
    "compliance",
)


def speed(v: dict[str, Any], p: dict[str, Plot]) -> str:
    s = v.get("speed")
    out: list[str] = []
    if isinstance(s, dict) and isinstance(s.get("ratio"), int | float):
        ci = s.get("interval") or {}
        conf = ci.get("confidence")
        level = f" ({conf:.0%} interval)" if isinstance(conf, float) else ""
        try:
            interval = f" [{ci['low']:.3f}, {ci['high']:.3f}]{level}"
        except (KeyError, TypeError, ValueError):
            interval = ""
        out.append(
            f"<p><b>Target/baseline step time {s['ratio']:.3f}{esc(interval)}, speedup "
            f"{s.get('speedup', 0):.2f}×: {esc(s.get('verdict'))}</b></p>"
        )
        if s.get("reliable") is False:
            out.append(
                '<p class="bad">The speed claim is unreliable: a compliance check failed '
                f"({esc(', '.join(s.get('unreliable_because') or []))}); rerun on an idle "
                "machine.</p>"
            )
        for key in ("note",):
            if s.get(key):
                out.append(f'<p class="note">{esc(s[key])}</p>')
        stop = s.get("stop") or {}
        if isinstance(stop, dict) and stop.get("message"):
            out.append(f'<p class="note">Measuring ended: {esc(stop["message"])}.</p>')
    else:
        out.append(
            '<p class="note">No speed verdict: a side failed or gave no steady-state samples.</p>'
        )
    out.append(figure(p.get("speed")))
    out.append(figure(p.get("step-times")))
    if isinstance(s, dict) and s.get("compliance"):
        rows = [
            [esc(c.get("name")), badge(c.get("passed")), esc(c.get("detail", ""))]
            for c in s["compliance"]
        ]
        out.append("<h3>Compliance runs</h3>" + table(["check", "result", "detail"], rows, 9))
    out.append(latency(v, p))
    if isinstance(s, dict):
        out.append(_rest(s, SPEED_KNOWN))
    return "".join(out)


LATENCY = (
    ("generation", "ttft_s", "TTFT"),
    ("generation", "tpot_s", "TPOT"),
    ("generation", "itl_s", "ITL"),
    ("generation", "e2e_s", "end to end"),
    ("generation", "output_tokens_per_s", "output tokens/s"),
    ("inference", "latency_s", "latency"),
)


def latency(v: dict[str, Any], p: dict[str, Plot]) -> str:
    rows = []
    for section, key, label in LATENCY:
        cells = []
        for role in ROLES:
            pct = (_side(v, role).get(section) or {}).get(key)
            if not isinstance(pct, dict):
                cells.append("-")
                continue
            unit = key if key.endswith("_s") else "rate"
            cells.append(" / ".join(fmt(unit, pct.get(q)) for q in ("p50", "p90", "p99")))
        if any(c != "-" for c in cells):
            rows.append([esc(f"{label} p50 / p90 / p99"), *cells])
    if not rows:
        return ""
    definitions: dict[str, str] = {}
    for role in ROLES:
        for section in ("generation", "inference"):
            definitions.update((_side(v, role).get(section) or {}).get("definitions") or {})
    notes = "".join(f"<li><b>{esc(k.upper())}</b>: {esc(d)}</li>" for k, d in definitions.items())
    return (
        "<h3>Latency</h3>"
        + figure(p.get("latency"))
        + table(_role_head(v), rows)
        + (f'<ul class="note">{notes}</ul>' if notes else "")
    )


MEMORY_ROWS = (
    ("host peak RSS", ("host_peak_rss",)),
    ("device peak allocated", ("device", "allocated")),
    ("device peak reserved", ("device", "reserved")),
)


def memory(v: dict[str, Any], p: dict[str, Plot]) -> str:
    mem = v.get("memory")
    if not isinstance(mem, dict) or not mem:
        return '<p class="note">no memory figures: a side did not run to the end</p>'
    rows = []
    phases = sorted({k for r in ROLES for k in (mem.get(r) or {})}, key=plots._phase_order)
    for phase in phases:
        for label, path in MEMORY_ROWS:
            values = [plots._dig_number((mem.get(r) or {}).get(phase), path) for r in ROLES]
            if any(x is not None for x in values):
                rows.append(
                    [esc(f"{phase}: {label}")]
                    + [esc(fmt_bytes(None if x is None else int(x))) for x in values]
                )
    return figure(p.get("memory")) + (table(_role_head(v), rows) if rows else generic(mem))


def phases(v: dict[str, Any], p: dict[str, Plot]) -> str:
    ph = v.get("phases")
    if not isinstance(ph, dict) or not ph:
        return '<p class="note">no phase times: a side did not run to the end</p>'
    keys: list[str] = []
    for role in ROLES:
        keys += [k for k in (ph.get(role) or {}) if k not in keys]
    rows = [[esc(k)] + [fmt(k, (ph.get(r) or {}).get(k)) for r in ROLES] for k in keys]
    return figure(p.get("phases")) + table(_role_head(v), rows)


def numerics(v: dict[str, Any], p: dict[str, Plot]) -> str:
    return figure(p.get("layers")) + generic(v.get("numerics"))


def cost(v: dict[str, Any], p: dict[str, Plot]) -> str:
    return figure(p.get("cost")) + generic(v.get("cost"))


RENDERERS: dict[str, Callable[[dict[str, Any], dict[str, Plot]], str]] = {
    "fairness": fairness,
    "differences": differences,
    "gates": gates,
    "quality": quality,
    "speed": speed,
    "memory": memory,
    "phases": phases,
    "numerics": numerics,
    "cost": cost,
}


def section_keys(v: dict[str, Any]) -> list[str]:
    """The sections to render, in the verdict's order (the two difference lists as one)."""
    keys: list[str] = []
    for key in v:
        name = "differences" if key in DIFF_KEYS else key
        if name not in HEADER_KEYS and name not in keys:
            keys.append(name)
    return keys


def render_html(run: Run) -> str:
    """The whole report as one HTML document."""
    v = run.verdict
    problems = list(run.problems)
    made = plots.all_plots(v, run.sides, problems)
    sections = []
    for key in section_keys(v):
        renderer = RENDERERS.get(key)
        try:
            body = renderer(v, made) if renderer else generic(v.get(key), key)
        except Exception as exc:  # a malformed section costs that section, not the report
            body = (
                f'<p class="bad">this section could not be rendered ({esc(type(exc).__name__)}: '
                f"{esc(exc)}); its JSON follows</p>"
                f"<pre>{esc(json.dumps(v.get(key), indent=1, default=str)[:5000])}</pre>"
            )
        sections.append(
            f'<section id="{anchor(key)}" data-section="{esc(key)}"><h2>{esc(title_of(key))}</h2>'
            f"{body}</section>"
        )
    nav = "".join(
        f'<a href="#{anchor(k)}">{esc(title_of(k))}</a>' for k in ["sides", *section_keys(v)]
    )
    notes = "".join(f'<p class="warn">{esc(x)}</p>' for x in problems)
    w = v.get("workload") or {}
    title = (
        f"parity: {w.get('name')} — {_side(v, 'baseline').get('spec')} against "
        f"{_side(v, 'target').get('spec')}"
    )
    stamp = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"{header(v)}<main><nav>{nav}</nav>{notes}{sides_section(v)}{''.join(sections)}"
        f"<footer>Written by parity {esc(__version__)} from {esc(run.path)} on {esc(stamp)}. "
        "Self-contained: no scripts, fonts or images are fetched.</footer></main></body></html>\n"
    )
