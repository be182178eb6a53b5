"""Render requests: one JSON object in, ``{"prompt", "intermediate", "retrieved"}`` out
(``promptsuite render --request FILE.json``; docs/templates.md, "Render requests")."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pytest_promptsuite.dialects.opencompass.meta_template import make_meta
from pytest_promptsuite.dialects.opencompass.meta_template import parse
from pytest_promptsuite.dialects.opencompass.multimodal import MMPromptTemplate
from pytest_promptsuite.dialects.opencompass.multiturn import MultiTurnPromptTemplate
from pytest_promptsuite.dialects.opencompass.prompt_list import prompt_list_from_json
from pytest_promptsuite.dialects.opencompass.prompt_list import to_json
from pytest_promptsuite.dialects.opencompass.retrievers import MakeRetriever
from pytest_promptsuite.dialects.opencompass.retrievers import Retriever
from pytest_promptsuite.dialects.opencompass.retrievers import build_ice
from pytest_promptsuite.dialects.opencompass.retrievers import builtin_retriever
from pytest_promptsuite.dialects.opencompass.template import PromptTemplate
from pytest_promptsuite.errors import TemplateError


REQUEST_KEYS = tuple(
    "prompt_template ice_template retriever ice_examples example output_column gen_field_replace_token mode"
    " label meta_template parser infer_mode model_outputs prompt_list".split()
)
TEMPLATE_KEYS = ("type", "template", "ice_token", "sep_token")
TEMPLATE_TYPES = {t.__name__: t for t in (PromptTemplate, MultiTurnPromptTemplate, MMPromptTemplate)}
_NOT_WITH_LIST = tuple("prompt_template ice_template example ice_examples retriever infer_mode model_outputs".split())
REQUEST_RETRIEVERS = ("ZeroRetriever", "FixKRetriever", "RandomRetriever")


def make_template(spec: Any, *, key: str) -> Any:
    """Make a template from ``{"type", "template", "ice_token", "sep_token"}``."""
    if not isinstance(spec, Mapping):
        raise TemplateError(f"{key} must be an object with a 'template', got {spec!r}")
    unknown = [k for k in spec if k not in TEMPLATE_KEYS]
    if unknown:
        raise TemplateError(f"{key}: unknown key {unknown[0]!r} (keys: {', '.join(TEMPLATE_KEYS)})")
    kind = spec.get("type", "PromptTemplate")
    if not isinstance(kind, str) or kind not in TEMPLATE_TYPES:
        raise TemplateError(f"{key}.type: unknown template type {kind!r} (types: {', '.join(TEMPLATE_TYPES)})")
    if "template" not in spec:
        raise TemplateError(f"{key}: missing 'template'")
    return TEMPLATE_TYPES[kind](spec["template"], spec.get("ice_token"), spec.get("sep_token"), name=key)


def _check(request: Any) -> dict[str, Any]:
    if not isinstance(request, Mapping):
        raise TemplateError(f"a render request must be a JSON object, got {type(request).__name__}")
    unknown = [k for k in request if k not in REQUEST_KEYS]
    if unknown:
        raise TemplateError(f"unknown request key {unknown[0]!r} (keys: {', '.join(REQUEST_KEYS)})")
    req = dict(request)
    if "prompt_list" in req:
        clash = [k for k in _NOT_WITH_LIST if k in req]
        if clash:
            raise TemplateError(f"request key {clash[0]!r} cannot be combined with 'prompt_list'")
    _check_values(req)
    return req


def _check_values(req: dict[str, Any]) -> None:
    mode = req.get("mode", "gen")
    if mode not in ("gen", "ppl"):
        raise TemplateError(f"mode must be 'gen' or 'ppl', got {mode!r}")
    parser = req.get("parser")
    if parser not in (None, "lm", "api"):
        raise TemplateError(f"parser must be 'lm', 'api' or null, got {parser!r}")
    meta = req.get("meta_template")
    if meta is not None and parser is None:
        raise TemplateError("meta_template is given but parser is null: say 'lm' or 'api'")
    if req.get("output_column") is not None and not isinstance(req["output_column"], str):
        raise TemplateError(f"output_column must be a string or null, got {req['output_column']!r}")
    if not isinstance(req.get("gen_field_replace_token", ""), str):
        raise TemplateError("gen_field_replace_token must be a string")
    if not isinstance(req.get("ice_examples", []), list):
        raise TemplateError("ice_examples must be an array of objects")


def _retriever(spec: Any, make: MakeRetriever) -> Retriever:
    if spec is None:
        spec = {"type": "ZeroRetriever"}
    if not isinstance(spec, Mapping):
        raise TemplateError(f"retriever must be an object with a 'type', got {spec!r}")
    name = spec.get("type", "ZeroRetriever")
    made = None
    if isinstance(name, str) and name in REQUEST_RETRIEVERS:
        made = make(name=name, params={k: v for k, v in spec.items() if k != "type"})
    if made is None:
        raise TemplateError(f"retriever.type: unknown retriever {name!r} (known: {', '.join(REQUEST_RETRIEVERS)})")
    return made


def _example(req: Mapping[str, Any]) -> Mapping[str, Any]:
    if "example" not in req:
        raise TemplateError("request key 'example' (the test row) is required")
    example = req["example"]
    if not isinstance(example, Mapping):
        raise TemplateError(f"example must be an object, got {type(example).__name__}")
    return example


def render_request(request: Any, *, make_retriever: MakeRetriever = builtin_retriever) -> dict[str, Any]:
    """Render one request into its response; every failure is a TemplateError."""
    req = _check(request)
    mode = req.get("mode", "gen")
    parser = req.get("parser")
    meta = make_meta(req.get("meta_template"))
    if "prompt_list" in req:
        return _rendered(prompt_list_from_json(req["prompt_list"]), parser, meta, mode)

    pt_spec = req.get("prompt_template")
    prompt_template = make_template(pt_spec, key="prompt_template") if pt_spec is not None else None
    for key in ("infer_mode", "model_outputs"):
        if key in req and not isinstance(prompt_template, MultiTurnPromptTemplate):
            raise TemplateError(f"request key {key!r} needs prompt_template.type 'MultiTurnPromptTemplate'")
    example = _example(req)
    if isinstance(prompt_template, MultiTurnPromptTemplate):
        if mode == "ppl":
            raise TemplateError("a MultiTurnPromptTemplate renders in gen mode only (mode 'ppl' given)")
        return _render_multiturn(req, prompt_template, example, meta, parser)
    if isinstance(prompt_template, MMPromptTemplate):
        if mode == "ppl":
            raise TemplateError("an MMPromptTemplate renders in gen mode only (mode 'ppl' given)")
        output_column, replace = req.get("output_column"), req.get("gen_field_replace_token", "")
        intermediate = prompt_template.gen_prompt(example, output_column=output_column, replace_token=replace)
        return _rendered(intermediate, parser, meta, mode)
    return _render_with_examples(req, prompt_template, example, meta, parser, make_retriever)


def _rendered(intermediate: Any, parser: str | None, meta: Any, mode: str) -> dict[str, Any]:
    """Return the response of a rendered intermediate: the prompt its parser makes, and the intermediate."""
    prompt = parse(intermediate, parser=parser, meta=meta, mode=mode)
    return {"prompt": to_json(prompt), "intermediate": to_json(intermediate), "retrieved": []}


def _render_with_examples(
    req: dict[str, Any],
    prompt_template: PromptTemplate | None,
    example: Mapping[str, Any],
    meta: Any,
    parser: str | None,
    make_retriever: MakeRetriever,
) -> dict[str, Any]:
    """Render a prompt template with the in-context examples its retriever picks from ``ice_examples``."""
    mode = req.get("mode", "gen")
    output_column = req.get("output_column")
    replace = req.get("gen_field_replace_token", "")
    it_spec = req.get("ice_template")
    ice_template = None
    if it_spec is not None:
        ice_template = make_template(it_spec, key="ice_template")
        if not isinstance(ice_template, PromptTemplate):
            raise TemplateError("ice_template.type must be 'PromptTemplate'")
    retriever = _retriever(req.get("retriever"), make_retriever)
    train = req.get("ice_examples", [])
    for i, row in enumerate(train):
        if not isinstance(row, Mapping):
            raise TemplateError(f"ice_examples[{i}] must be an object, got {type(row).__name__}")
    options: dict[str, Any] = {"output_column": output_column, "replace_token": replace, "mode": mode}
    options.update(label=req.get("label"), has_label="label" in req)
    intermediate, retrieved = render_prompt(prompt_template, ice_template, retriever, train, example, **options)
    prompt = parse(intermediate, parser=parser, meta=meta, mode=mode)
    return {"prompt": to_json(prompt), "intermediate": to_json(intermediate), "retrieved": retrieved}


def choose_prompt_template(
    prompt_template: PromptTemplate | None, ice_template: PromptTemplate | None
) -> PromptTemplate:
    """Return the template that renders the prompt: the prompt template, else the ice template."""
    if prompt_template is None and ice_template is None:
        raise TemplateError(
            "no template: give prompt_template (and ice_template for examples); "
            "an ice_template alone needs an ice_token"
        )
    if ice_template is not None:
        chosen = prompt_template if prompt_template is not None else ice_template
        which = "prompt_template" if prompt_template is not None else "ice_template (no prompt_template)"
        if chosen.ice_token is None:
            raise TemplateError(
                f"{which} has no ice_token: with an ice_template the prompt needs an ice_token "
                "to mark where the in-context examples go"
            )
        return chosen
    assert prompt_template is not None
    return prompt_template


def render_prompt(
    prompt_template: PromptTemplate | None,
    ice_template: PromptTemplate | None,
    retriever: Any,
    train: Sequence[Mapping[str, Any]],
    example: Mapping[str, Any],
    *,
    output_column: str | None,
    replace_token: str = "",
    mode: str = "gen",
    label: Any = None,
    has_label: bool = True,
    indices: list[int] | None = None,
) -> tuple[Any, list[int]]:
    """Render the intermediate of one test row (examples retrieved, template filled) and return it
    with the train indices used."""
    chosen = choose_prompt_template(prompt_template, ice_template)
    if indices is None:
        indices = retriever.retrieve(train, [example], output_column=output_column)[0]
    separator, eos = retriever.ice_separator, retriever.ice_eos_token
    if ice_template is not None and ice_template.kind == "dialogue":  # OpenCompass: a dialogue, not a label map
        separator, eos = "", ""
    ice = build_ice(indices, train, ice_template, output_column=output_column, separator=separator, eos=eos)
    if mode == "ppl":
        if chosen.kind == "labels" and not has_label:
            raise TemplateError("mode 'ppl' with a label map needs the request key 'label'")
        intermediate = chosen.label_prompt(example, label, ice)
    else:
        intermediate = chosen.gen_prompt(example, ice, output_column=output_column, replace_token=replace_token)
    return intermediate, list(indices)


def _render_multiturn(
    req: dict[str, Any], template: MultiTurnPromptTemplate, example: Mapping[str, Any], meta: Any, parser: str | None
) -> dict[str, Any]:
    outputs = req.get("model_outputs", [])
    if not isinstance(outputs, list) or not all(o is None or isinstance(o, str) for o in outputs):
        raise TemplateError("model_outputs must be an array of strings or nulls")
    infer_mode = req.get("infer_mode", "every")
    bot_role = (meta.generate_role if meta is not None else None) or "BOT"
    conv = template.conversation(example, infer_mode=infer_mode, bot_role=bot_role)
    requests: list[Any] = []
    intermediates: list[Any] = []
    replies: list[str] = []
    positions = conv.request_turns()
    for k, position in enumerate(positions):
        intermediate = conv.request(position, replies)
        intermediates.append(to_json(intermediate))
        requests.append(to_json(parse(intermediate, parser=parser, meta=meta, mode="gen")))
        if k == len(positions) - 1:
            break
        stop, reply = _turn_reply(outputs, k, infer_mode)
        if stop:
            break
        if reply is not None:
            replies.append(reply)
    return {"requests": requests, "intermediate": intermediates, "chat": to_json(conv.chat), "retrieved": []}


def _turn_reply(outputs: list[str | None], k: int, infer_mode: str) -> tuple[bool, str | None]:
    """Return whether the conversation stops after request ``k + 1`` (its model output is null) and, in the
    ``every`` mode, the reply that feeds the next request."""
    if infer_mode != "every":
        return k < len(outputs) and outputs[k] is None, None
    if k >= len(outputs):
        raise TemplateError(
            f"model_outputs has {len(outputs)} replies but request {k + 2} needs the reply to request {k + 1}"
        )
    return outputs[k] is None, outputs[k]
