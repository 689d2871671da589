"""The answer of a search: the cheapest candidate that meets the targets, the frontier of cost per
million tokens against tokens per second per user, and why each chip loses; as text, JSON or CSV."""
from __future__ import annotations

import csv
import io
import json

import numpy as np

from ..evaluation.fit import within
from ..typeset.fmt import sig
from .search import DEPLOYMENTS, LAYOUT_RULES, LEFT_OUT, READING, TTFT, Search
from .workers import TOKEN_BUDGET

DEGREES = ("tp", "dp_attention", "ep", "pp", "chips")
# the columns of a row: (key, the quantity it is, its unit)
ROW = (("tokens_per_user", "user_speed", "token/s/sequence"), ("cost_per_mtoken", "cost_per_token", "USD/Mtoken"),
       ("step_time", "step_time", "ms"))


def _masks(s: Search):
    c, t = s.columns, s.targets
    speed, cost, _ = READING[t.by]
    fits = within(c["hbm_fill_layout"], c["memory_share"])   # the engine's share of the HBM, as eval judges
    if "within" in c:   # whole workers within --total-gpus
        fits = fits & c["within"]
    fast = c[speed] >= t.min_tokens_per_user
    if t.max_ttft is not None:
        fast &= c[TTFT] <= t.max_ttft
    priced = np.isfinite(c[cost])
    return fits, fast, priced


def _row(s: Search, i: int, data_args: str) -> dict:
    c, t = s.columns, s.targets
    way = c["deployment"][i]
    r = {"hardware": c["hardware"][i], "weight_format": c["weight_format"][i],
         "compute_format": c["compute_format"][i], "deployment": way,
         **{k: int(c[k][i]) for k in DEGREES}, "batch": int(c["batch"][i])}
    if way == "disaggregated":
        r["prefill_pool_ratio"] = _num(c["pool_ratio"][i])
    if "copies" in c:   # whole workers within --total-gpus: each kind's count, layout and batch
        r["total_gpus"] = t.total_gpus
        dec = {"count": int(c["copies"][i]), **{k: int(c[k][i]) for k in (*DEGREES, "batch")}}
        if way == "disaggregated":
            r["workers"] = {"prefill": {"count": int(c["prefill_workers"][i]),
                                        **{k: int(c["prefill_" + k][i]) for k in (*DEGREES, "batch")},
                                        "token_budget": TOKEN_BUDGET, "load": _num(c["prefill_load"][i])},
                            "decode": dec}
        else:   # the decoding copies prefill too; an in-flight one within its step's token budget
            r["workers"] = {way: {**dec, "token_budget": TOKEN_BUDGET} if way == "in-flight" else dec}
        r["gpus_used"] = sum(w["count"] * w["chips"] for w in r["workers"].values())
    for by, (speed, cost, step) in READING.items():
        r[by] = {"tokens_per_user": _num(c[speed][i]), "cost_per_mtoken": _num(c[cost][i]),
                 "step_time_ms": _num(c[step][i])}
    r["expected"]["efficiency"] = _num(c["efficiency"][i])
    speed, cost, step = READING["expected"]
    if speed + "_low" in c:   # the range the engine model's held-out error spans
        r["expected"]["range"] = {
            "tokens_per_user": sorted([_num(c[speed + "_low"][i]), _num(c[speed + "_high"][i])], key=_key),
            "cost_per_mtoken": sorted([_num(c[cost + "_low"][i]), _num(c[cost + "_high"][i])], key=_key),
            "step_time_ms": sorted([_num(c[step + "_low"][i]), _num(c[step + "_high"][i])], key=_key)}
    r["hbm_fill"] = _num(c["hbm_fill_layout"][i])
    # what a launch command needs (emit.py): the formats, the engine's share of HBM and the weights' in it
    r["kv_format"] = c["kv_format"][i] if "kv_format" in c else ""
    r["native_format"] = c["native_format"][i]
    r["memory_share"] = float(c["memory_share"][i])
    r["weight_share"] = float(c["weight_share"][i])
    r["ttft_s"] = _num(c[TTFT][i])
    kv = c["kv_format"][i] if "kv_format" in c else ""
    sets = [f"weight_format={r['weight_format']}", *([f"kv_format={kv}"] if kv else []), f"context={t.context:g}",
            f"pass_tokens={t.prompt or t.context:g}", f"output_tokens={t.output:g}",
            *(f"{k}={r[k]}" for k in DEGREES), f"batch={r['batch']}"]
    quantity = DEPLOYMENTS[way][t.by][1]
    head = f"python3 build.py eval {{}} --hardware {r['hardware']} --model {s.model}{data_args} "
    if "prefill" in r.get("workers", {}):
        # xPyD: the decode worker's own cost (the row's is it times the chips per decode chip), and
        # the first token on a prefill worker at its load
        quantity = "cost_per_token_expected_layout" if t.by == "expected" else "cost_per_token_layout"
        p = r["workers"]["prefill"]
        pre = [x for x in sets if not x.startswith((*DEGREES, "batch="))]
        pre += [*(f"{k}={p[k]}" for k in DEGREES), f"batch={p['batch']}", f"prefill_load={float(c['prefill_load'][i])!r}"]
        r["prefill_command"] = head.format("time_to_first_token_queued") + " ".join(f"--set {x}" for x in pre)
    r["command"] = head.format(quantity) + " ".join(f"--set {x}" for x in sets)
    return r


def _key(x):
    return -np.inf if x is None else x


def _num(x) -> float | None:
    return None if not np.isfinite(x) else float(x)


def frontier(s: Search, among: np.ndarray) -> list[int]:
    """Indices of the candidates in ``among`` (a mask) that no other beats on both cost and speed,
    fastest first."""
    speed, cost, _ = READING[s.targets.by]
    idx = np.flatnonzero(among & np.isfinite(s.columns[cost]) & np.isfinite(s.columns[speed]))
    order = idx[np.lexsort((s.columns[cost][idx], -s.columns[speed][idx]))]
    out, best = [], np.inf
    for i in order:
        if s.columns[cost][i] < best:
            out.append(int(i))
            best = s.columns[cost][i]
    return out


def _cheapest(s: Search, among: np.ndarray) -> int:
    """The cheapest candidate in ``among``; at equal cost the faster, then the fewer chips: a pick
    on the frontier, never a tie's slower twin."""
    speed, cost, _ = READING[s.targets.by]
    idx = np.flatnonzero(among)
    c = s.columns
    return int(idx[np.lexsort((c["chips"][idx], -c[speed][idx], c[cost][idx]))[0]])


def as_json(s: Search, data_args: str = "") -> dict:
    """The whole answer as one object."""
    c, t = s.columns, s.targets
    speed, cost, _ = READING[t.by]
    fits, fast, priced = _masks(s) if c else (None, None, None)
    ok = fits & fast & priced if c else None
    best = other = None
    if c is not None and c and ok.any():
        i = _cheapest(s, ok)
        best = _row(s, i, data_args)
        rest = ok & (c["deployment"] != c["deployment"][i])
        other = _row(s, _cheapest(s, rest), data_args) if rest.any() else None
    chips = {}
    for hw, why in s.chips.items():
        if why:
            chips[hw] = {"verdict": "not searched", "why": why}
            continue
        mine = c["hardware"] == hw
        chips[hw] = _chip_verdict(s, hw, mine, fits, fast, priced, best, data_args)
        chips[hw]["frontier"] = [_row(s, i, data_args) for i in frontier(s, mine & fits)]
    if best is not None and "range" in best.get("expected", {}) and t.by == "expected":
        # another chip whose cheapest cost lies inside the pick's range cannot be told apart from it
        top = best["expected"]["range"]["cost_per_mtoken"][1]
        best["within_range"] = [hw for hw, v in chips.items() if v.get("verdict") == "dearer"
                                and v["best"]["expected"]["cost_per_mtoken"] is not None
                                and v["best"]["expected"]["cost_per_mtoken"] <= top]
    return {
        "model": s.model, "context": t.context, "context_raised": t.context_raised, "prompt": t.prompt or t.context,
        "targets": {"min_tokens_per_user": t.min_tokens_per_user, "max_ttft_s": t.max_ttft},
        "judged_by": t.by,
        "efficiencies": s.efficiencies if t.by == "expected" else None,
        "output": t.output,
        "searched": s.searched,
        "best": best,
        "best_other": other,
        "frontier": [_row(s, i, data_args) for i in frontier(s, fits)] if c else [],
        "chips": chips,
        "rules": list(LAYOUT_RULES),
        "left_out": list(LEFT_OUT),
    }


def _chip_verdict(s, hw, mine, fits, fast, priced, best, data_args) -> dict:
    c = s.columns
    speed, cost, _ = READING[s.targets.by]
    if not (mine & fits).any():
        i = int(np.flatnonzero(mine)[np.argmin(c["hbm_fill_layout"][mine])])
        return {"verdict": "does not fit",
                "why": f"no layout searched holds the weights and KV cache in the engine's {c['memory_share'][i]:.0%} "
                       f"of HBM: at best {c['hbm_fill_layout'][i]:.0%} ({c['chips'][i]:g} chips, batch {c['batch'][i]:g})"}
    if not (mine & fits & fast).any():
        i = int(np.flatnonzero(mine & fits)[np.nanargmax(c[speed][mine & fits])])
        return {"verdict": "too slow",
                "why": f"at most {sig(c[speed][i])} token/s per user at any batch that fits"
                       + (f" (time to first token {sig(c[TTFT][i])} s)" if s.targets.max_ttft is not None else ""),
                "fastest": _row(s, i, data_args)}
    ok = mine & fits & fast
    if not (ok & priced).any():
        i = int(np.flatnonzero(ok)[np.nanargmax(c[speed][ok])])
        return {"verdict": "no price", "why": "meets the targets, but has no rental price: not ranked on cost",
                "fastest": _row(s, i, data_args)}
    ok &= priced
    i = _cheapest(s, ok)
    row = _row(s, i, data_args)
    if best is not None and row["command"] == best["command"]:
        return {"verdict": "cheapest", "why": "the cheapest that meets the targets", "best": row}
    ratio = c[cost][i] / best[s.targets.by]["cost_per_mtoken"] if best else np.nan
    return {"verdict": "dearer", "why": f"{sig(c[cost][i])} USD/Mtoken at best, {sig(ratio)}x the cheapest",
            "best": row}


def _layout(r: dict) -> str:
    return f"tp {r['tp']} · dp {r['dp_attention']} · ep {r['ep']} = {r['chips']}"


def _workers(r: dict) -> str:
    """Whole workers in a few words: "2 prefill tp 2 (2 prompts a pass) + 1 decode tp 4 (batch 64)"."""
    def one(role, w):
        lay = f"tp {w['tp']}" + (f" · dp {w['dp_attention']} · ep {w['ep']}" if w["ep"] > 1 else "")
        what = (f"{w['batch']} prompt{'s' if w['batch'] != 1 else ''} a pass" if role == "prefill"
                else f"batch {w['batch']:,}")
        return f"{w['count']} {role} {lay} ({what})"
    return " + ".join(one(role, w) for role, w in r["workers"].items())


def _deployment(r: dict) -> str:
    """How a row is deployed, in a few words: colocated, or the prefill pool's chips per decoding chip."""
    if "workers" in r:
        ws = r["workers"]
        return (f"{ws['prefill']['count']}P{ws['decode']['count']}D" if r["deployment"] == "disaggregated"
                else f"{r['deployment']} x{ws[r['deployment']]['count']}")
    if r["deployment"] in ("colocated", "in-flight"):
        return r["deployment"]
    ratio = r.get("prefill_pool_ratio")
    return "disaggregated" + (f" (P:D {sig(ratio)})" if ratio is not None else "")


def _why(d: dict, by: str) -> str | None:
    """Why the pick's deployment wins: the cheapest of the other way at the same targets, and what
    makes the difference."""
    b, o = d["best"], d.get("best_other")
    if b is None:
        return None
    if o is None:
        return (f"only {b['deployment']} deployments meet the targets" if d["targets"]["max_ttft_s"] is None
                else f"only {b['deployment']} deployments meet the targets (the first token within the limit)")
    ratio = o[by]["cost_per_mtoken"] / b[by]["cost_per_mtoken"]
    other = f"{o['hardware']}, {_layout(o)} chips, batch {o['batch']:,}"
    return (f"{b['deployment']} wins, {sig(ratio)}x cheaper than the best {o['deployment']} ({other}): "
            + _how(b, o, d["targets"]["min_tokens_per_user"]))


# what each way of deploying costs the decoding (derivations/disaggregation.py)
_PREFILLS = {"colocated": "every prompt a copy admits stops all its sequences' decode steps for its whole prefill",
             "in-flight": "every prompt's chunks lengthen the decode steps that carry them",
             "disaggregated": "a prefill pool prefills beside the decoding copies, and each prompt's KV cache crosses "
                              "the network before its first token"}


def _how(b: dict, o: dict, speed: float) -> str:
    """What makes the winning way cheaper than the other's best, in a sentence."""
    if b["deployment"] == "disaggregated" and o["batch"] < b["batch"]:
        return (f"{o['deployment']}, {_PREFILLS[o['deployment']]}, so at {sig(speed)} token/s per user its batch must "
                f"stay smaller; a prefill pool lets the decoding copies run batch {b['batch']:,}")
    if b["deployment"] == "disaggregated":
        return (f"{o['deployment']}, {_PREFILLS[o['deployment']]}; a prefill pool prefills beside them, so each "
                "decoding copy turns out more answer tokens in its chip-time")
    if o["deployment"] == "colocated":
        return (f"colocated, {_PREFILLS['colocated']} and reads the weights again; in-flight batching carries each "
                "prompt's chunks on steps that read them anyway")
    return (f"the prompts a copy takes in ({_PREFILLS[b['deployment']]}) barely slow its decoding, and no KV cache "
            "crosses the network")


def text(s: Search, data_args: str = "") -> str:
    """A report a person reads: the question, the answer, the frontier, and each chip's verdict."""
    d = as_json(s, data_args)
    t, by = s.targets, s.targets.by
    raised = " (raised to hold the prompt and its answer)" if t.context_raised else ""
    lines = [f"plan: {s.model}, context {t.context:,.0f} tokens{raised}, answers of {t.output:,.0f} tokens, at least {sig(t.min_tokens_per_user)} token/s "
             f"per user" + (f", first token within {sig(t.max_ttft)} s (prompt {d['prompt']:,.0f})"
                             if t.max_ttft is not None else "")
             + f"; judged by the {by} numbers; {d['searched']:,} candidates searched"]
    if by == "expected" and d["efficiencies"]:
        lines.append("  expected = the engine model fitted to published runs (validate): "
                     + d["efficiencies"]["fit"])
    b = d["best"]
    if b is None:
        lines.append("no chip searched meets the targets (see each chip's verdict below)")
    else:
        lines.append(f"cheapest: {b['hardware']}, weights {b['weight_format']}, {_layout(b)} chips, {_deployment(b)}, batch "
                     f"{b['batch']:,}: {sig(b[by]['tokens_per_user'])} token/s per user{_range(b, by, 'tokens_per_user')}, "
                     f"{sig(b[by]['cost_per_mtoken'])} USD/Mtoken{_range(b, by, 'cost_per_mtoken')}, step "
                     f"{sig(b[by]['step_time_ms'])} ms, {_first_token(b, by if d['efficiencies'] else 'bound')}, "
                     f"{b['hbm_fill']:.0%} of HBM")
        if "workers" in b:
            lines.append(f"  mode: {b['deployment']}; workers within {b['total_gpus']} GPUs ({b['gpus_used']} used): "
                         f"{_workers(b)}" + (f"; prefill load {b['workers']['prefill']['load']:.0%}"
                                               if "prefill" in b["workers"] else ""))
        other = "bound" if by == "expected" else "expected"
        if b[other]["cost_per_mtoken"] is not None:
            lines.append(f"  ({other}: {sig(b[other]['tokens_per_user'])} token/s per user, "
                         f"{sig(b[other]['cost_per_mtoken'])} USD/Mtoken)")
        why = _why(d, by)
        if why:
            lines.append(f"  {why}")
        if b.get("within_range"):
            lines.append("  within the pick's range (the expected numbers cannot tell them apart): "
                         + ", ".join(b["within_range"]))
        lines.append(f"  reproduce: {b['command']}")
        if b.get("prefill_command"):   # xPyD: the command gives the decode worker's cost, the row's per chip used
            lines.append(f"    (the decode worker's cost; the deployment's is it x {sig(b['gpus_used'])} chips / "
                         f"{sig(b['workers']['decode']['count'] * b['chips'])} decoding)")
            lines.append(f"  first token: {b['prefill_command']}")
    lines.append("")
    lines.append("frontier (no candidate is both cheaper and faster), fastest first:")
    head = ("chip", "weights", "layout (chips)", "deployment", "batch", "token/s/user", "USD/Mtoken", "step ms", "HBM")
    body = [(r["hardware"], r["weight_format"], _layout(r), _deployment(r), f"{r['batch']:,}",
             sig(r[by]["tokens_per_user"]) + _range(r, by, "tokens_per_user"),
             sig(r[by]["cost_per_mtoken"]) + _range(r, by, "cost_per_mtoken"), sig(r[by]["step_time_ms"]),
             f"{r['hbm_fill']:.0%}")
            for r in _thin(d["frontier"], b)]
    lines += _aligned([head, *body])
    lines.append("")
    lines.append("by chip:")
    w = max((len(h) for h in d["chips"]), default=0)
    for hw, v in d["chips"].items():
        lines.append(f"  {hw:<{w}}  {v['verdict']}: {v['why']}")
    lines.append("rules kept: " + "; ".join(LAYOUT_RULES))
    lines.append("left out: " + "; ".join(LEFT_OUT))
    return "\n".join(lines)


def _first_token(r: dict, by: str) -> str:
    if r["ttft_s"] is None:   # an input missing for the chip (a scale-out link), or a queue that never empties
        return ("first token: not evaluated (the chip lacks an input it reads, or its prompts keep the prefill busy "
                "all the time: `eval` of it says which)")
    return f"first token {sig(r['ttft_s'])} s ({_ttft_kind(r, by)})"


def _ttft_kind(r: dict, by: str) -> str:
    """What the first token's time holds: the expected prefill or its bound (whole prefill workers'
    passes at their bound), and the queue, where the deployment has one."""
    kind = "expected" if by == "expected" and "workers" not in r else "its bound"
    if r["deployment"] in ("colocated", "in-flight") or "workers" in r:
        return f"{kind}, with the wait for the prompts queued ahead, M/D/1"
    return kind


def _range(r: dict, by: str, key: str) -> str:
    """" (lo–hi)" of an expected number's range, or "" for a bound."""
    rng = r[by].get("range", {}).get(key) if by == "expected" else None
    if not rng or None in rng:
        return ""
    return f" ({sig(rng[0])}–{sig(rng[1])})"


def _thin(rows: list[dict], pick: dict | None = None, most: int = 24) -> list[dict]:
    """At most ``most`` frontier rows for the text, evenly through it and always with the row picked
    (JSON and CSV carry all)."""
    if len(rows) <= most:
        return rows
    keep = set(np.linspace(0, len(rows) - 1, most).round().astype(int).tolist())
    keep |= {i for i, r in enumerate(rows) if pick is not None and r["command"] == pick["command"]}
    return [rows[i] for i in sorted(keep)]


def _aligned(rows: list[tuple]) -> list[str]:
    widths = [max(len(str(r[i])) for r in rows) for i in range(len(rows[0]))]
    return ["  " + "  ".join(str(v).ljust(w) if j < 4 else str(v).rjust(w) for j, (v, w) in enumerate(zip(r, widths)))
            for r in rows]


def as_csv(s: Search, data_args: str = "") -> str:
    """The frontier, one row per candidate, units in the header."""
    by = s.targets.by
    d = as_json(s, data_args)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["hardware", "weight_format", *DEGREES, "deployment", "prefill_pool_ratio [1]", "batch [sequence]",
                "tokens_per_user [token/s/sequence]",
                "cost_per_mtoken [USD/Mtoken]", "step_time [ms]", "hbm_fill [1]", "ttft [s]", "judged_by", "command"])
    for r in d["frontier"]:
        w.writerow([r["hardware"], r["weight_format"], *(r[k] for k in DEGREES), r["deployment"],
                    r.get("prefill_pool_ratio", 0.0), r["batch"],
                    r[by]["tokens_per_user"], r[by]["cost_per_mtoken"], r[by]["step_time_ms"], r["hbm_fill"],
                    r["ttft_s"], by, r["command"]])
    return buf.getvalue()


def dumps(d: dict) -> str:
    return json.dumps(d, indent=2, ensure_ascii=False)
