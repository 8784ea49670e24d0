"""The parts of the verdict a decision rests on besides the measurements: fairness, the
configuration differences, the comparison contract, what is still unproven, and the
operational checklist."""

from __future__ import annotations

from collections.abc import Mapping

from parity.errors import ContractError
from parity.judge import stack
from parity.model.bundle import Bundle
from parity.model.codec import Json, encode
from parity.model.findings import Finding
from parity.model.manifest import Resolved, SettingChange, SettingJudged
from parity.model.spec import SIDE_FIELDS, SideSpec
from parity.model.verdict import (
    BEHAVIOUR_FLAGS,
    DATA_PIPELINE,
    OPERATIONAL_ITEMS,
    SETTINGS_GATE,
    UNPROVEN_ITEMS,
    ByRole,
    ConfigDifference,
    Contract,
    ContractRow,
    EnvironmentDifference,
    Fairness,
    Gate,
    OperationalItem,
    SideInfo,
    UnprovenItem,
)
from parity.model.workload import FingerprintParts

#: settings that actually ran, compared beside the side specs (see ``config_differences``)
RESOLVED_FIELDS = ("compile_backend", "threads", "matmul", "conv")
#: a difference in a behaviour flag (``BEHAVIOUR_FLAGS``) between two sides that both
#: report one is a configuration change
MAY_DIFFER = (*SIDE_FIELDS, "matmul", "conv", *BEHAVIOUR_FLAGS.values())


def fairness(a: Bundle, b: Bundle, allow: dict[str, str]) -> Fairness:
    """Equal fingerprints, or every differing part allowed; else ContractError."""
    differing = a.manifest.workload.parts.differing(b.manifest.workload.parts)
    if a.fingerprint != b.fingerprint and not differing:
        differing = ("fingerprint",)
    refused = [p for p in differing if p not in allow]
    if refused:
        raise ContractError(
            f"the bundles ran different workloads ({', '.join(refused)} differ): compare "
            "bundles of the same workload spec, or accept each difference with "
            + " ".join(f'--allow-diff {p}="reason"' for p in refused)
        )
    script = a.manifest.script_mode or b.manifest.script_mode
    return Fairness(
        fingerprint_match=not differing,
        fingerprint=a.fingerprint,
        differing_fields=differing,
        allowed={p: allow[p] for p in differing},
        # script mode saw a command, not the weights and data: the contract is unverified
        verified=False if script else None,
        note=_unverified(a, b) if script else None,
    )


def _unverified(a: Bundle, b: Bundle) -> str | None:
    """Why a script mode comparison's contract is unverified, as its workload says."""
    said = (x.manifest.workload.description.contract for x in (a, b))
    return next((x for x in said if x is not None), None)


def _show(value: object) -> str:
    return "default" if value is None else str(value)


def config_differences(
    spec_a: SideSpec, spec_b: SideSpec, res_a: Resolved | None, res_b: Resolved | None
) -> tuple[ConfigDifference, ...]:
    """The side settings that differ, as run: the specs, then what the workers resolved
    where the specs do not show it (the compile backend actually used, threads, and the
    matmul and convolution formats when both sides asked for the same precision)."""
    rows = [
        ConfigDifference(setting=key, baseline=x, target=y)
        for key, x, y in spec_a.config_differences(spec_b)
        if key not in ("compile_backend", "threads") or res_a is None or res_b is None
    ]
    if res_a is None or res_b is None:
        return tuple(rows)
    for key in RESOLVED_FIELDS:
        if key in ("matmul", "conv") and res_a.precision != res_b.precision:
            continue  # implied by the precision difference already listed
        x, y = getattr(res_a, key), getattr(res_b, key)
        if x != y:
            rows.append(ConfigDifference(setting=key, baseline=_show(x), target=_show(y)))
    return tuple(rows)


def flag_differences(a: Bundle, b: Bundle) -> tuple[ConfigDifference, ...]:
    """The behaviour flags (``BEHAVIOUR_FLAGS``) both sides' devices report, where they
    differ: NEURON_LAUNCH_BLOCKING, which TorchNeuron may set at import, makes launches
    synchronous and changes what Adaptive Eager fuses."""
    env_a, env_b = a.manifest.environment, b.manifest.environment
    if env_a is None or env_b is None:
        return ()
    fa, fb = env_a.device.flags, env_b.device.flags
    return tuple(
        ConfigDifference(setting=label, baseline=_show(fa[key]), target=_show(fb[key]))
        for key, label in BEHAVIOUR_FLAGS.items()
        if key in fa and key in fb and fa[key] != fb[key]
    )


def _json(mapping: Mapping[str, str | int | float | bool | None]) -> Json:
    out: dict[str, Json] = {k: v for k, v in mapping.items()}
    return out


def _environment_fields(bundle: Bundle, listed: bool) -> dict[str, Json]:
    """The settings compared; with both sides' package lists (``listed``) the backend
    packages and the digest are left to the package rows, which say more."""
    env = bundle.manifest.environment
    repo = bundle.manifest.workload.description.repository
    if env is None:
        return {"workload repository": None if repo is None else str(repo)}
    fields: dict[str, Json] = {
        "parity version": env.parity,
        "python": env.python,
        "torch": env.torch.version,
        "device name": env.device.name,
        "device count": env.device.count,
        "backend packages": _json(env.device.backend_packages),
        "device flags": _json(env.device.flags),
        "cpu": env.cpu.model,
        "host": env.hostname,
        "pip freeze": env.pip_freeze.sha256,
        "workload repository": None if repo is None else str(repo),
    }
    if listed:
        del fields["backend packages"], fields["pip freeze"]
    return fields


def environment_differences(a: Bundle, b: Bundle) -> tuple[EnvironmentDifference, ...]:
    """The environment settings that differ, then the git state of the workload's source,
    then each package that differs (torch and the backend packages first)."""
    env_a, env_b = a.manifest.environment, b.manifest.environment
    packages = None
    if env_a is not None and env_b is not None:
        packages = stack.package_differences(env_a.pip_freeze, env_b.pip_freeze)
    fields_a = _environment_fields(a, packages is not None)
    fields_b = _environment_fields(b, packages is not None)
    rows = [
        EnvironmentDifference(field=k, baseline=fields_a.get(k), target=fields_b.get(k))
        for k in dict.fromkeys([*fields_a, *fields_b])
        if fields_a.get(k) != fields_b.get(k)
    ]
    for d in packages or ():
        rows.append(
            EnvironmentDifference(
                field=f"package {d.name}",
                baseline=d.baseline.label if d.baseline else None,
                target=d.target.label if d.target else None,
                package=d,
            )
        )
    return tuple(rows)


def _short(value: str | int | None) -> str | int | None:
    if isinstance(value, str) and len(value) == 64:
        return value[:12]
    return value


def contract(
    a: Bundle, b: Bundle, fair: Fairness, changes: tuple[ConfigDifference, ...]
) -> Contract:
    """What must match (each fingerprint part) and what may differ (the side's settings)."""
    pa, pb = a.manifest.workload.parts, b.manifest.workload.parts
    rows = []
    for part in FingerprintParts.names():
        x, y = pa.value(part), pb.value(part)
        if part == "code" and x is None and y is None:  # parity's own workloads
            continue
        rows.append(
            ContractRow(
                field=part,
                baseline=_short(x),
                target=_short(y),
                matches=x == y,
                allowed=None if x == y else fair.allowed.get(part),
            )
        )
    return Contract(
        must_match=tuple(rows),
        may_differ=MAY_DIFFER,
        configuration_changes=changes,
        holds=all(r.matches or r.allowed for r in rows),
        verified=fair.verified,
        note=fair.note,
    )


def unproven(checked: dict[str, str], sides: ByRole[SideInfo]) -> tuple[UnprovenItem, ...]:
    """Each item ticked only where this comparison checked it (``checked``: item -> how
    a check proved it), and the data pipeline where both sides measured their loader."""
    fed = _pipeline_measured(sides) if DATA_PIPELINE not in checked else None
    return tuple(
        UnprovenItem(
            item=item,
            checked=item in checked or (item == DATA_PIPELINE and fed is not None),
            evidence=checked.get(item),
            how_to_check=how,
            finding=fed if item == DATA_PIPELINE else None,
        )
        for item, how in UNPROVEN_ITEMS
    )


def _pipeline_measured(sides: ByRole[SideInfo]) -> Finding | None:
    """Both sides measured their loader: what each found (None: a side did not)."""
    found = {role: info.input_pipeline for role, info in sides.items()}
    if any(p is None for p in found.values()):
        return None
    reasons: dict[str, Json] = {role: p.reason for role, p in found.items() if p is not None}
    return Finding(code="unproven.pipeline-measured", severity="context", figures=reasons)


def operational(answers: dict[str, str]) -> tuple[OperationalItem, ...]:
    return tuple(
        OperationalItem(
            item=label, answer=answers.get(key) or None, answered=bool(answers.get(key))
        )
        for key, label in OPERATIONAL_ITEMS.items()
    )


#: settings whose change makes a comparison unfair even where both sides made it: a side
#: that declared float32 computed in float64
UNFAIR_SETTINGS = frozenset({"default_dtype"})


def settings_gate(sides: Mapping[str, tuple[Bundle, ...]]) -> Gate | None:
    """The torch settings a workload's code changed after set-up (``Resolved.changed``),
    each judged by comparing the sides as their steps ran (``Resolved.timed``), not each
    side against torch's defaults: a setting both sides ran with alike (nanoGPT's
    ``allow_tf32 = True`` on both) is reported and passes; one that differs between the
    sides fails where it changes what a side computes in (``SettingChange.breaks_contract``),
    and a change that makes the comparison unfair whatever the other side did (an "fp32"
    side that ran in float64: ``UNFAIR``) fails too. None where no bundle recorded one."""
    found: dict[str, SettingChange] = {}
    for bundles in sides.values():
        for bundle in bundles:
            resolved = bundle.manifest.resolved
            for change in (resolved.changed or ()) if resolved is not None else ():
                found.setdefault(change.setting, change)
    if not found:
        return None
    judged = tuple(
        _judged(change, {role: _ran_with(bundles, name) for role, bundles in sides.items()})
        for name, change in found.items()
    )
    changed = Finding(
        code="decision.settings-changed",
        severity="blocks" if any(j.fails for j in judged) else "context",
        figures={"settings": [encode(j) for j in judged]},
    )
    return Gate(name=SETTINGS_GATE, passed=not any(j.fails for j in judged), finding=changed)


def _ran_with(bundles: tuple[Bundle, ...], setting: str) -> tuple[str, ...]:
    """The values ``setting`` had in a side's timed steps, over its bundles that say."""
    values: list[str] = []
    for bundle in bundles:
        resolved = bundle.manifest.resolved
        timed = resolved.timed if resolved is not None else None
        if timed is not None and str(getattr(timed, setting)) not in values:
            values.append(str(getattr(timed, setting)))
    return tuple(values)


def _judged(change: SettingChange, ran: dict[str, tuple[str, ...]]) -> SettingJudged:
    alike = len({v for values in ran.values() for v in values}) == 1 and all(ran.values())
    unfair = change.setting in UNFAIR_SETTINGS
    return SettingJudged(
        setting=change.setting,
        before=change.before,
        ran=ran,
        alike=alike,
        breaks_contract=change.breaks_contract,
        unfair=unfair,
        fails=unfair or (change.breaks_contract and not alike),
    )
