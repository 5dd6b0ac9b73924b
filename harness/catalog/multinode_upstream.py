"""Why a multi-node row is not captured, said from upstream's own history: a recipe file the
launcher's checkout lacks, a recipe field srtctl at the launcher's pin does not know, and the
keys upstream deploys with scripts the recording stand-ins do not play yet. The git lookups
run on the InferenceX and srt-slurm git dirs the importer was given."""

from __future__ import annotations

import re
import subprocess

RECIPES = "benchmarks/multi_node/srt-slurm-recipes/"

# Keys upstream deploys with its own scripts that start their containers through pyxis
# (`srun --container-image`), which the Slurm/Docker stand-in does not play yet.
PYXIS_SCRIPTS = {
    "llmd-vllm": "deployed by upstream's llm-d scripts, not srt-slurm (runners/launch_gb200-nv.sh"
                 " llmd-vllm branch -> benchmarks/multi_node/dsv4_fp4_gb200_llmd-vllm-disagg.sh "
                 "-> llm-d/{submit.sh,job.slurm,server.sh}, CONFIG_FILE naming an llm-d recipe "
                 "of benchmarks/multi_node/llm-d-recipes/): its job starts one pyxis container a "
                 "node (srun --container-image, LLMD_CONTAINER_ENGINE=pyxis), which the "
                 "Slurm/Docker recording stand-in (harness/catalog/standins/slurm_docker.py) "
                 "does not play yet",
    "tilert": "deployed by upstream's TileRT scripts, not srt-slurm (runners/launch_b200-dgxc-"
              "slurm.sh -> benchmarks/multi_node/glm5.1_fp8_b200_tilert-disagg.sh -> "
              "tilert_utils/{submit.sh,run_node.sh}): prefill (vLLM image) and decode (TileRT "
              "image) start as pyxis containers (srun --container-image), which the "
              "Slurm/Docker recording stand-in (harness/catalog/standins/slurm_docker.py) does "
              "not play yet",
}


def _git(git_dir: str, *args: str) -> str:
    out = subprocess.run(["git", "-C", git_dir, *args], capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def _refs(git_dir: str) -> list[str]:
    return _git(git_dir, "for-each-ref", "--format=%(refname)").split()


def _newest(git_dir: str) -> str:
    line = _git(git_dir, "for-each-ref", "--sort=-committerdate", "--count=1",
                "--format=%(objectname:short) of %(committerdate:short)")
    return line or "unknown"


def _commit(ix_git: str, *args: str) -> str:
    """`<short sha> (<date>, "<subject>")` of the first commit git log answers, or ''."""
    line = _git(ix_git, "log", "--format=%h%x09%cs%x09%s", *args).split("\n")[0]
    if not line:
        return ""
    sha, date, subject = line.split("\t", 2)
    return f"{sha} ({date}, \"{subject}\")"


def why_missing(ix_git: str, commit: str, cfg: str, repo: str, sha: str, srt_git: str,
                launcher: str) -> str:
    """A recipe file the launcher's checkout (with its overlays) does not have."""
    path = cfg.split(":", 1)[0]
    rel = path[len("recipes/"):] if path.startswith("recipes/") else path
    why = f"{path} is not in {repo}@{sha[:12]} with the launcher's overlays"
    anywhere = [r for r in _refs(srt_git)
                if _git(srt_git, "ls-tree", "--name-only", r, "--", path)]
    why += ("; no branch or tag of the srt-slurm git dir has it either "
            f"({len(_refs(srt_git))} refs, newest commit {_newest(srt_git)})" if not anywhere
            else f"; srt-slurm has it at {anywhere[0]}, which {launcher} does not check out")
    deleted = _commit(ix_git, "-1", "--diff-filter=D", commit, "--", RECIPES + rel)
    if deleted:
        readded = _commit(ix_git, "-1", f"-S{rel.rsplit('/', 1)[-1]}", commit, "--",
                          "configs/nvidia-master.yaml")
        why += (f". InferenceX deleted its own copy ({RECIPES}{rel}) at {deleted}"
                + (f"; the master row naming it was last added at {readded}" if readded else "")
                + f": upstream's own run of this row at {commit[:8]} fails the same way")
    return why


FIELD = re.compile(r"\{'(\w+)': \{'(\w+)': \['Unknown field\.'\]\}\}")


def why_refused(error: str, ix_git: str, commit: str, cfg: str, repo: str, ref: str,
                srt_git: str, launcher: str) -> str:
    """srtctl's refusal, with where the unknown field comes from upstream."""
    why = f"srtctl refused the recipe: {error}"
    m = FIELD.search(error)
    if not m:
        return why
    section, name = m.groups()
    decl = re.compile(rf"^\s+{name}\s*:", re.M)
    having = [r for r in _refs(srt_git)
              if decl.search(_git(srt_git, "show", f"{r}:src/srtctl/core/schema.py"))]
    path = cfg.split(":", 1)[0]
    rel = path[len("recipes/"):] if path.startswith("recipes/") else path
    added = _commit(ix_git, "--reverse", f"-S{name}", commit, "--", RECIPES + rel)
    pinned = _commit(ix_git, "-1", f"-S{ref}", commit, "--", launcher)
    why += (f". No branch or tag of {repo} in the srt-slurm git dir ({len(_refs(srt_git))} "
            f"refs, newest commit {_newest(srt_git)}) declares {section}.{name} in "
            "src/srtctl/core/schema.py" if not having else
            f". {section}.{name} is declared at {having[0]}, not at {ref}")
    if added:
        why += f"; InferenceX's recipe gained it at {added}"
    if pinned:
        why += f"; {launcher} checks out {ref} since {pinned}"
    return why + f": upstream's own `srtctl apply` of this row at {commit[:8]} fails the same way"
