"""The view's provenance: where the results came from (run dirs, experiments, servers, clients,
models, lengths, warmup, simulation), from the normalised manifests (:class:`analysis.data.RunInfo`)
and the first result row of each cell."""

from __future__ import annotations

import time
from typing import Any

from specsweep.analysis import core
from specsweep.analysis.data import Dataset, finite_number
from specsweep.report.build import view as V


def length_info(scenario: str, r: dict[str, Any]) -> V.LengthInfo | None:
    """The length rule of a result row with ``random_*_len`` keys (issue 19 item 15)."""
    from specsweep.workload.lengths import length_rule

    if r.get("dataset_name") not in (None, "random", "random-ids", "shared-prefix"):
        return None
    try:
        rule = length_rule(
            int(r["random_input_len"]),
            int(r["random_output_len"]),
            float(r.get("random_range_ratio") or 0.0),
            str(r.get("range_ratio_mode") or "sglang"),
        )
    except (KeyError, TypeError, ValueError):
        return None
    return V.LengthInfo(scenario=scenario, input_lo=rule.input_lo, input_hi=rule.input_hi, output_lo=rule.output_lo,
                        output_hi=rule.output_hi, ratio=rule.ratio, mode=rule.mode)  # fmt: skip


def clients_note(servers: list[V.ServerInfo]) -> list[V.Msg]:
    """A note when the configs compared were measured by different benchmark clients, whose metric
    definitions differ (docs/metrics.md, "Metrics of other clients")."""
    tools = list(dict.fromkeys(c for s in servers for c in s.clients))
    if len(tools) < 2:
        return []
    by = "; ".join(f"{tool}: " + ", ".join(s.label for s in servers if tool in s.clients) for tool in tools)
    return [V.Msg(key="note.clients", args={"clients": by, "doc": METRICS_DOC, "doc_href": METRICS_HREF})]


METRICS_DOC = "docs/metrics.md"
METRICS_HREF = "docs/metrics.md#metrics-of-other-clients"  # the renderers make {doc} a link to it


def provenance(ds: Dataset, t: core.Table, now: str | None) -> V.Provenance:
    """Distinct values in first-seen order, over the run dirs and configs the table uses."""
    exps: list[Any] = []
    sources: list[Any] = []
    clients: list[Any] = []
    tools: list[Any] = []
    datasets: list[Any] = []
    lengths: list[V.LengthInfo] = []
    warm: list[int] = []
    models: list[Any] = []
    backends: list[Any] = []
    simulated, scale, ignore_eos = False, None, None

    def add(lst: list[Any], v: Any) -> None:
        if v not in (None, "") and v not in lst:
            lst.append(v)

    used = {d for col in t.columns for lab in col.members for d in ds.configs[lab].run_dirs}
    runs = [run for run in ds.runs if run.path in used]
    for run in runs:
        add(exps, run.experiment)
        add(sources, run.source)
        add(tools, run.tool_version)
        add(clients, run.client)
        add(warm, run.warmup)
        if run.ignore_eos is not None:
            ignore_eos = run.ignore_eos or bool(ignore_eos)
        add(datasets, run.dataset)
        if run.simulated:
            simulated = True
            scale = run.time_scale if run.time_scale_recorded else scale
    servers = []
    client_of = {run.path: run.client.split(" --backend ")[0] for run in ds.runs}
    for col in t.columns:
        for lab in col.members:
            meta = ds.configs[lab]
            mine = list(dict.fromkeys(client_of[d] for d in meta.run_dirs if d in client_of))
            servers.append(
                V.ServerInfo(
                    name=meta.server or lab, label=lab, method=meta.method, params=meta.params,
                    backend=meta.backend, model=meta.model, argv=meta.argv, version=meta.version,
                    run_dirs=list(meta.run_dirs), column=col.label, clients=mine,
                )
            )  # fmt: skip
            add(models, meta.model)
            add(backends, meta.backend)
            if (meta.backend or "").startswith("sim"):
                simulated = True
    for cell in ds.cells.values():
        if str(cell.run_dirs[0] if cell.run_dirs else "") not in used:
            continue
        for r in cell.ok[:1]:
            add(datasets, r.get("dataset_name"))
            add(lengths, length_info(cell.scenario, r))
            if r.get("ignore_eos") is not None:
                ignore_eos = bool(r["ignore_eos"]) or bool(ignore_eos)
            if finite_number(r.get("time_scale")) is not None:
                simulated, scale = True, finite_number(r.get("time_scale"))
            w = r.get("warmup_requests")
            if isinstance(w, int) and not isinstance(w, bool) and w not in warm:
                warm.append(w)
    return V.Provenance(
        comparability=clients_note(servers),
        run_dirs=[run.path for run in runs], experiments=[str(e) for e in exps], sources=sources,
        servers=servers, models=models, backends=backends, clients=clients, warmup=sorted(warm),
        ignore_eos=ignore_eos, datasets=[str(d) for d in datasets], simulated=simulated, time_scale=scale,
        lengths=sorted(lengths, key=lambda x: x.scenario),
        tool_versions=[str(x) for x in tools],
        generated_at=now or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )  # fmt: skip
