"""`harness catalog diff OLD NEW`: what changed between two imports (two `captured/`
directories, or the recipe directories holding them): keys added and removed, the commit,
and per launch (matched by its job: topology, speculation, offload, concurrency) the server's
argv as flag groups, its environment, its files, helpers and setup steps, launches added or
gone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.catalog.compare import argv_changes, env_changes

JOB_FIELDS = ("tp", "ep", "dp-attn", "pcp-size", "dcp-size", "spec-decoding", "kv-offloading",
              "isl", "osl")


def _captures(d: str | Path) -> dict[str, dict[str, Any]]:
    root = Path(d)
    if (root / "captured").is_dir():
        root = root / "captured"
    return {p.stem: json.loads(p.read_text()) for p in sorted(root.glob("*.json"))}


def launch_id(c: dict[str, Any]) -> str:
    job = c.get("job") or {}
    parts = [f"{f}={job[f]}" for f in JOB_FIELDS if f in job]
    return " ".join([*parts, f"conc={c.get('conc')}"])


def _server_env(c: dict[str, Any]) -> dict[str, str]:
    s = c.get("server") or {}
    return {str(k): str(v) for k, v in (s.get("env_added") or s.get("env") or {}).items()}


def launch_changes(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if old.get("status") != new.get("status"):
        out.append(f"status {old.get('status')} -> {new.get('status')}: {new.get('reason', '')}")
    so, sn = old.get("server") or {}, new.get("server") or {}
    fo, fn = so.get("files") or {}, sn.get("files") or {}
    out += [f"argv {x}" for x in argv_changes(so.get("argv") or [], sn.get("argv") or [], fo, fn)]
    out += [f"env {x}" for x in env_changes(_server_env(old), _server_env(new))]
    for name in sorted(set(fo) | set(fn)):
        if fo.get(name) != fn.get(name):
            out.append(f"file {name} " + ("added" if name not in fo else "removed"
                                          if name not in fn else "changed"))
    for part in ("helpers", "setup"):
        a = [json.dumps(x, sort_keys=True) for x in old.get(part) or []]
        b = [json.dumps(x, sort_keys=True) for x in new.get(part) or []]
        out += [f"{part} - {x}" for x in a if x not in b]
        out += [f"{part} + {x}" for x in b if x not in a]
    if old.get("script") != new.get("script"):
        out.append(f"script {old.get('script')} -> {new.get('script')}")
    return out


def diff_text(old_dir: str | Path, new_dir: str | Path) -> tuple[str, bool]:
    """(the report, whether anything changed)."""
    old, new = _captures(old_dir), _captures(new_dir)
    lines: list[str] = []
    commits = ({d.get("commit") for d in old.values()}, {d.get("commit") for d in new.values()})
    lines.append(f"commit {', '.join(sorted(map(str, commits[0])))} -> "
                 f"{', '.join(sorted(map(str, commits[1])))}")
    changed = False
    for k in sorted(set(new) - set(old)):
        lines.append(f"+ key {k} ({len(new[k].get('launches') or [])} launches)")
        changed = True
    for k in sorted(set(old) - set(new)):
        lines.append(f"- key {k}")
        changed = True
    for k in sorted(set(old) & set(new)):
        lo = {launch_id(c): c for c in old[k].get("launches") or []}
        ln = {launch_id(c): c for c in new[k].get("launches") or []}
        body: list[str] = []
        body += [f"  + launch {i}" for i in ln if i not in lo]
        body += [f"  - launch {i}" for i in lo if i not in ln]
        for i in (i for i in lo if i in ln):
            ch = launch_changes(lo[i], ln[i])
            if ch:
                body.append(f"  launch {i}:")
                body += [f"    {x}" for x in ch]
        if body:
            changed = True
            lines += [f"key {k}:", *body]
    if not changed:
        lines.append("no key, launch, argv, environment or file changed")
    return "\n".join(lines), changed


def diff(old_dir: str, new_dir: str) -> str:
    return diff_text(old_dir, new_dir)[0]
