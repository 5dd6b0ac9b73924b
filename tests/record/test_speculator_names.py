"""A speculator's own name and k survive into every table, label and gate line.

`speculator=self_draft` runs the method `draft_model` (recipes/speculator/self_draft.yaml): the
gate, `harness speculation` and the pages must say "self_draft k=2", and the gate's agentic lines
at one load must differ by what differs (plain, or the speculator and its injected AL). Tried
through the real CLI on a run shaped like `make run`'s agentic job: plain at 1 and 2 trees,
self_draft at ALs 1.4 and 1.8 at one tree, two repeats (values from the committed baseline)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from harness.record.spec_names import name_speculators, spec_label, spec_name, speculator_name
from tests.helpers import harness

BASELINE = Path("results/baselines/scripted/points.jsonl")
SPEC_JOB = "job3-agentic-weka-cpu-decode-llamacpp-draft_model"


def _point(base: dict, conc: int, repeat: int, al: float | None) -> dict:
    p = {**base, "scenario": "agentic-weka-cpu-decode", "scenario_kind": "agentic", "isl": 0,
         "osl": 0, "conc": conc, "repeat": repeat}
    if al is None:
        p.update(spec_method="none", spec_k=0, spec_acceptance_mode="none",
                 spec_acceptance_length=None, job="job2-agentic-weka-cpu-decode-llamacpp-none")
    else:
        p.update(spec_method="draft_model", spec_k=2, spec_acceptance_mode="injected",
                 spec_acceptance_length=al, job=SPEC_JOB)
    tag = hashlib.sha256(json.dumps([conc, repeat, al]).encode()).hexdigest()[:12]
    p["point_id"] = f"c{conc}-r{repeat}-{tag}"
    return p


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("names") / "run"
    (root / "configs").mkdir(parents=True)
    base = [json.loads(x) for x in BASELINE.read_text().splitlines()]
    points = []
    for rep in range(2):
        points += [_point(base[3 * rep], 1, rep, None), _point(base[3 * rep + 1], 2, rep, None),
                   _point(base[3 * rep], 1, rep, 1.4), _point(base[3 * rep], 1, rep, 1.8)]
    (root / "points.jsonl").write_text("".join(json.dumps(p) + "\n" for p in points))
    # the job's resolved config, as the sweep writes it: the speculator as the user chose it
    (root / "configs" / f"{SPEC_JOB}.yaml").write_text(
        "speculator:\n  method: draft_model\n  k: 2\n  draft_model: self\n")
    return root


def test_gate_lines_at_one_load_differ_by_speculator_and_al(run) -> None:
    r = harness("gate", "--baseline", str(run), "--candidate", str(run))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = [x for x in r.stdout.splitlines() if "| tput_per_gpu |" in x and "conc 1 |" in x]
    labels = [x.split("|")[1].strip() for x in rows]
    assert len(labels) == 3 == len(set(labels)), labels
    assert any("· plain ·" in x for x in labels)
    assert any("self_draft k=2 · AL 1.4 injected" in x for x in labels)
    assert any("self_draft k=2 · AL 1.8 injected" in x for x in labels)
    assert "draft_model" not in r.stdout


def test_speculation_tables_name_the_speculator(run) -> None:
    r = harness("speculation", str(run), "--include-invalid")
    assert r.returncode == 0, r.stderr
    assert "self_draft k=2 (AL 1.4 injected)" in r.stdout
    assert "self_draft k=2 (AL 1.8 injected)" in r.stdout
    assert "draft_model" not in r.stdout


def test_pages_name_the_speculator_in_titles_hover_filter_and_sibling_links(run,
                                                                            tmp_path) -> None:
    out = tmp_path / "d.html"
    r = harness("dashboard", str(run), "--out", str(out))
    assert r.returncode == 0, r.stderr
    html = out.read_text()
    assert "self_draft k=2 \\u00b7 AL requested 1.4" in html  # the hover line
    assert html.count('"spec_name": "self_draft"') == 4  # the speculator filter's values
    titles = {}
    for page in (tmp_path / "d_points").rglob("*.html"):
        title = re.search(r"<title>([^<]*)", page.read_text())[1]  # type: ignore[index]
        titles[page.stem] = title
    # page names carry the speculator and k (harness/publish/links.py readable_point_name)
    conc1_r0 = {pid: t for pid, t in titles.items() if re.match(r"c1-(self_draft-k2-)?r0-", pid)}
    assert len(conc1_r0) == 3 == len(set(conc1_r0.values())), conc1_r0
    assert sum(pid.startswith("c1-self_draft-k2-r0-") for pid in conc1_r0) == 2, conc1_r0
    assert not any("draft_model" in t for t in titles.values())
    page = next(p for p in (tmp_path / "d_points").rglob("c1-r0-*.html"))
    specs = set(re.findall(r'"spec":"([^"]*)"', page.read_text()))
    assert specs == {"plain", "self_draft k=2 · AL 1.4 injected",
                     "self_draft k=2 · AL 1.8 injected"}


def test_the_name_rules() -> None:
    assert speculator_name("draft_model", "self") == "self_draft"
    assert speculator_name("draft_model", "org/small-drafter") == "draft_model"
    assert speculator_name("mtp", None) == "mtp" and speculator_name(None, None) == "none"
    assert spec_name({"spec_method": "draft_model", "spec_name": "self_draft"}) == "self_draft"
    assert spec_label({"spec_method": "none"}) == "plain"
    assert spec_label({"spec_method": "ngram", "spec_k": 4, "spec_acceptance_mode": "real",
                       "spec_acceptance_length": None}) == "ngram k=4"


def test_a_point_whose_job_config_is_gone_keeps_its_method(tmp_path) -> None:
    p = {"spec_method": "draft_model", "spec_k": 2, "job": "gone"}
    name_speculators([p], tmp_path)
    assert "spec_name" not in p and spec_name(p) == "draft_model"
