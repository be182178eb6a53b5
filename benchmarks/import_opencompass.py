"""Import real OpenCompass dataset configs and render every suite: the counts of issue #14.

    python benchmarks/import_opencompass.py --configs PATH/TO/opencompass/configs

``--configs`` is the ``configs`` folder of an OpenCompass checkout or of the PyPI package
(``pip install opencompass`` in a scratch venv; it is never a dependency of ours). Each config of
the list below is imported with ``promptsuite import opencompass`` (no model, no data: one example
case per suite) and every suite it writes is rendered with ``promptsuite render``; the script
prints one line per config and the counts (gen / ppl, few-shot / zero-shot, string / dialogue).
``--all`` does the same for every dataset config of the folder (about 1,500; ``--why`` prints the
first failure of each config, and the failures counted by their message with names and paths cut).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import json
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_promptsuite.cli.main import main
from pytest_promptsuite.formats.tomlio import parse_toml


#: Two gen/ppl configs of each of 40 well-known datasets, relative to ``configs/datasets`` (the first
#: two by name; for gsm8k and math the next ones, as their first are agent configs for
#: ``AgentInferencer`` with SYSTEM turns inside a round, which render only with an agent model's meta
#: template, so ``--model`` is needed for them).
CONFIGS = """
ARC_c/ARC_c_cot_gen_926652.py ARC_c/ARC_c_few_shot_gen_e9b043.py ARC_e/ARC_e_gen_1e0de5.py ARC_e/ARC_e_ppl_2ef631.py
ceval/ceval_gen_2daf24.py ceval/ceval_gen_5f30c7.py cmmlu/cmmlu_0shot_cot_gen_305931.py
cmmlu/cmmlu_0shot_nocot_llmjudge_gen_e1cd9a.py mmlu/mmlu_gen_23a9a9.py mmlu/mmlu_gen_4d595a.py
hellaswag/hellaswag_10shot_gen_e42710.py hellaswag/hellaswag_10shot_ppl_59c85e.py piqa/piqa_gen_1194eb.py
piqa/piqa_ppl_0cfff2.py siqa/siqa_gen_18632c.py siqa/siqa_gen_e78df3.py winogrande/deprecated_winogrande_gen_a9ede5.py
winogrande/winogrande_5shot_gen_6447e6.py race/race_cot_gen_d95929.py race/race_few_shot_gen_a498ed.py
obqa/obqa_gen_9069e4.py obqa/obqa_ppl_1defe8.py commonsenseqa/commonsenseqa_7shot_cot_gen_734a22.py
commonsenseqa/commonsenseqa_gen_1da2d0.py storycloze/storycloze_gen_7f656a.py storycloze/storycloze_ppl_496661.py
bbh/bbh_0shot_nocot_gen_655e66.py bbh/bbh_0shot_nocot_gen_925fc4.py gsm8k/gsm8k_0shot_v2_gen_17d799.py
gsm8k/gsm8k_0shot_gen_a58960.py math/math_4shot_base_gen_43d5b6.py
math/deprecated_math_evaluatorv2_gen_265cce.py humaneval/deprecated_humaneval_gen_4a6eef.py
humaneval/deprecated_humaneval_gen_6d1cc2.py mbpp/deprecated_mbpp_gen_1e1056.py mbpp/deprecated_mbpp_gen_6590b0.py
triviaqa/triviaqa_gen_0356ec.py triviaqa/triviaqa_gen_2121ce.py nq/nq_gen_0356ec.py nq/nq_gen_2463e2.py
SuperGLUE_BoolQ/SuperGLUE_BoolQ_cot_gen_1d56df.py SuperGLUE_BoolQ/SuperGLUE_BoolQ_few_shot_gen_ba58ea.py
SuperGLUE_RTE/SuperGLUE_RTE_gen_68aac7.py SuperGLUE_RTE/SuperGLUE_RTE_ppl_50f8f6.py
SuperGLUE_WiC/SuperGLUE_WiC_gen_d06864.py SuperGLUE_WiC/SuperGLUE_WiC_ppl_312de9.py
SuperGLUE_COPA/SuperGLUE_COPA_gen_91ca53.py SuperGLUE_COPA/SuperGLUE_COPA_ppl_54058d.py
SuperGLUE_CB/SuperGLUE_CB_gen_854c6c.py SuperGLUE_CB/SuperGLUE_CB_ppl_0143fe.py CLUE_afqmc/CLUE_afqmc_gen_901306.py
CLUE_afqmc/CLUE_afqmc_ppl_378c5b.py CLUE_cmnli/CLUE_cmnli_gen_1abf97.py CLUE_cmnli/CLUE_cmnli_gen_51e956.py
FewCLUE_eprstmt/FewCLUE_eprstmt_gen_740ea0.py FewCLUE_eprstmt/FewCLUE_eprstmt_ppl_1ce587.py
FewCLUE_tnews/FewCLUE_tnews_gen_b90e4a.py FewCLUE_tnews/FewCLUE_tnews_ppl_7d1c07.py lambada/lambada_gen_217e11.py
lambada/lambada_gen_8b48a5.py summedits/summedits_gen_315438.py summedits/summedits_gen_4fb38b.py
strategyqa/strategyqa_gen_1180a7.py strategyqa/strategyqa_gen_934441.py agieval/agieval_gen_5c79b4.py
agieval/agieval_gen_a0c741.py GaokaoBench/GaokaoBench_gen_5cfe9e.py
GaokaoBench/GaokaoBench_no_subjective_gen_4c31db.py drop/deprecated_drop_gen_8a9ed9.py drop/drop_gen_a2697c.py
flores/flores_gen_806ede.py flores/flores_gen_aad4fd.py TheoremQA/TheoremQA_5shot_gen_6f0af8.py
TheoremQA/ThroremQA_0shot_cot_gen_8acdf7.py winograd/winograd_ppl_8f3049.py winograd/winograd_ppl_b6c7ed.py
crowspairs/crowspairs_gen_02b6c1.py crowspairs/crowspairs_gen_381af0.py anli/anli_gen_fc7328.py
anli/anli_ppl_1d290e.py
""".split()


def _default_configs() -> Path | None:
    spec = importlib.util.find_spec("opencompass")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "configs"


def _kinds(table: dict[str, Any]) -> tuple[str, str, str]:
    """(gen|ppl, few-shot|zero-shot, string|dialogue) of one imported suite's [template]."""
    template = table["template"]
    mode = "ppl" if template.get("inferencer") == "ppl" else "gen"
    retriever = template.get("retriever", {}).get("type", "ZeroRetriever")
    shots = "few-shot" if retriever != "ZeroRetriever" else "zero-shot"
    inner = (template.get("prompt_template") or template.get("ice_template") or {}).get("template")
    values = list(inner.values()) if isinstance(inner, dict) and not {"round", "begin", "end"} & set(inner) else [inner]
    form = "dialogue" if any(isinstance(v, dict) for v in values) else "string"
    return mode, shots, form


def _run(
    configs: Path, relative: str, scratch: Path, model: Path | None = None
) -> tuple[str, list[tuple[str, str, str]], int, int, str]:
    """Import one config (with ``model``) and render its suites: verdict, kinds, suites, suites rendered,
    first failure."""
    out = scratch / (relative.replace("/", "__") + ("__model" if model else ""))
    quiet = io.StringIO()
    extra = ["--model", str(model)] if model else []
    with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
        try:
            status = main(["import", "opencompass", str(configs / "datasets" / relative), "--out", str(out), *extra])
        except Exception as exc:  # a crash of ours: counted as such, the sweep goes on
            status, quiet = 1, io.StringIO(f"crash: {type(exc).__name__}: {exc}")
    if status != 0:
        why = (quiet.getvalue().strip().splitlines() or ["?"])[-1]
        return "import failed", [], 0, 0, why
    suites = sorted(p for p in out.iterdir() if (p / "promptsuite.toml").is_file())
    kinds, rendered, why = [], 0, ""
    for suite in suites:
        kinds.append(_kinds(parse_toml((suite / "promptsuite.toml").read_bytes(), "promptsuite.toml")[0]))
        shown, errors = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(shown), contextlib.redirect_stderr(errors):
            try:
                status = main(["render", "--prompt-suite", str(suite)])
            except Exception as exc:
                status, errors = 1, io.StringIO(f"crash: {type(exc).__name__}: {exc}")
        lines = [json.loads(line) for line in shown.getvalue().splitlines() if line.startswith("{")]
        failed = [line["error"] for line in lines if line.get("error") is not None]
        ok = status == 0 and not failed
        rendered += ok
        if not ok and not why:
            why = str(failed[0]) if failed else (errors.getvalue().strip().splitlines() or ["?"])[0]
    return ("ok" if rendered == len(suites) else "render failed"), kinds, len(suites), rendered, why


def _cause(why: str) -> str:
    """Cut a failure's message to its cause: paths, quoted names and numbers taken out."""
    why = re.sub(r"\S*/\S*", "PATH", why)
    why = re.sub(r"'[^']*'|\"[^\"]*\"", "'X'", why)
    return re.sub(r"\d+", "N", why)[:150]


def main_(argv: list[str] | None = None) -> int:
    """Import and render every config of :data:`CONFIGS`; print the counts."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=Path, default=_default_configs(), help="OpenCompass's configs folder")
    parser.add_argument("--all", action="store_true", help="every dataset config of the folder, not the list")
    parser.add_argument("--why", action="store_true", help="print each config's first failure and the causes")
    parser.add_argument(
        "--model",
        type=Path,
        help="a model config whose meta template has a SYSTEM role in its round (e.g. models/hf_internlm/"
        "hf_internlm2_chat_7b_with_system.py): configs with SYSTEM turns in a round (agent configs), which "
        "OpenCompass renders only with such a model, are imported again with it",
    )
    args = parser.parse_args(argv)
    if args.configs is None or not (args.configs / "datasets").is_dir():
        print(
            "give --configs PATH/TO/opencompass/configs (pip install opencompass in a scratch venv, or a "
            "checkout of github.com/open-compass/opencompass)",
            file=sys.stderr,
        )
        return 2
    start = time.perf_counter()
    datasets = args.configs / "datasets"
    listed = sorted(str(p.relative_to(datasets)) for p in datasets.rglob("*.py")) if args.all else CONFIGS
    totals: dict[str, int] = {}
    causes: dict[str, int] = {}
    imported = suites_total = rendered_total = whole = with_model = 0
    with tempfile.TemporaryDirectory() as scratch:
        for relative in listed:
            verdict, kinds, suites, rendered, why = _run(args.configs, relative, Path(scratch))
            if args.model and "is not in the meta template's round" in why:
                verdict, kinds, suites, rendered, why = _run(args.configs, relative, Path(scratch), args.model)
                verdict += " (--model)" if verdict == "ok" else ""
                with_model += 1
            imported += verdict != "import failed"
            whole += verdict.startswith("ok")
            suites_total, rendered_total = suites_total + suites, rendered_total + rendered
            modes = sorted({k for kind in kinds for k in kind})
            print(f"{relative:55} {verdict:14} {rendered:3}/{suites:<3} suites rendered  {' '.join(modes)}")
            if why and args.why:
                print(f"    {why[:300]}")
                cause = f"{verdict}: {_cause(why)}"
                causes[cause] = causes.get(cause, 0) + 1
            for key in {k for kind in kinds for k in kind}:
                totals[key] = totals.get(key, 0) + 1
    print(
        f"\n{len(listed)} configs: {imported} imported with no edits, {whole} rendered whole; "
        f"{suites_total} suites written, {rendered_total} rendered ({time.perf_counter() - start:.1f} s)"
        + (f"; {with_model} imported again with --model" if with_model else "")
    )
    for cause, count in sorted(causes.items(), key=lambda item: -item[1]):
        print(f"{count:5}  {cause}")
    print(
        "configs by kind: "
        + ", ".join(f"{k} {totals.get(k, 0)}" for k in ("gen", "ppl", "few-shot", "zero-shot", "string", "dialogue"))
    )
    return 0 if imported == len(listed) and rendered_total == suites_total else 1


if __name__ == "__main__":
    sys.exit(main_())
