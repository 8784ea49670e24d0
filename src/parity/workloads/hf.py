"""``hf:ARCH[-TASK]``: Hugging Face transformers architectures, built without a download.

(``hf:PATH`` and ``hf:ORG/NAME``, a checkpoint on disk, are ``parity.workloads.checkpoint``;
the language-model data, runners and probes both use are ``parity.workloads.lm``.)

A model is built from its configuration class with explicit sizes
(``GPT2Config(n_layer=2, ...)`` then ``GPT2LMHeadModel(config)``), its weights initialised
by transformers' own initialisation under parity's seed; no ``from_pretrained``, no
``AutoConfig``, no network. The data are byte tokens of the corpus that ships with parity
(``gpt.corpus_windows``) mapped into the model's vocabulary, or labels derived from them.

Names: ``hf:gpt2``, ``hf:llama`` (causal-LM training), ``hf:bert`` (masked-LM training),
``hf:t5`` (seq2seq training), ``-generate`` (greedy decoding of a fixed number of tokens
with the model's key/value cache: gpt2, llama, t5) and ``-classify`` (sequence
classification training: gpt2, llama, bert). ``--size`` picks the configuration;
``--hf-config KEY=VALUE`` (``WorkloadSpec.overrides``) sets any attribute of the
configuration class, so both enter the fingerprint. Dropout is off by default, so that
both sides compute the same function; ``--hf-config`` can turn it back on.

transformers is the optional extra ``hf`` (``pip install 'parity[hf]'``); it is imported
only when an ``hf:`` workload is resolved.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any, ClassVar

import torch
from torch import nn

from parity.errors import WorkloadError
from parity.model.spec import WorkloadSpec
from parity.model.workload import WorkloadDescription
from parity.workloads.base import Knob, SizeTable
from parity.workloads.gpt import corpus_windows
from parity.workloads.lm import LmGenerate, LmTrain, LmWorkload

EXTRA_HINT = "pip install 'parity[hf]'"
N_BATCHES = 16
TASKS = ("train", "generate", "classify")

RUN_KNOBS = {
    "tiny": {"batch_size": 4, "seq_len": 32, "steps": 20},
    "small": {"batch_size": 8, "seq_len": 128, "steps": 50},
    "base": {"batch_size": 8, "seq_len": 512, "steps": 100},
}
GENERATE_KNOBS = {
    "tiny": {"batch_size": 2, "seq_len": 16, "steps": 5, "new_tokens": 16},
    "small": {"batch_size": 4, "seq_len": 64, "steps": 10, "new_tokens": 32},
    "base": {"batch_size": 8, "seq_len": 128, "steps": 10, "new_tokens": 64},
}


@dataclass(frozen=True, kw_only=True)
class Arch:
    """One architecture: its config class, model class per task, sizes and fixed settings."""

    config_class: str
    models: dict[str, str]
    objective: str  # what "train" means: causal | masked | seq2seq
    sizes: SizeTable
    fixed: dict[str, Knob] = field(default_factory=dict)
    #: the config key that bounds the sequence length, if any
    positions: str | None = None


ARCHS: dict[str, Arch] = {
    "gpt2": Arch(
        config_class="GPT2Config",
        models={
            "train": "GPT2LMHeadModel",
            "generate": "GPT2LMHeadModel",
            "classify": "GPT2ForSequenceClassification",
        },
        objective="causal",
        sizes={
            "tiny": {
                "n_layer": 2,
                "n_embd": 64,
                "n_head": 4,
                "n_positions": 128,
                "vocab_size": 512,
            },
            "small": {
                "n_layer": 4,
                "n_embd": 256,
                "n_head": 4,
                "n_positions": 512,
                "vocab_size": 50257,
            },
            # GPT-2 (124M)
            "base": {
                "n_layer": 12,
                "n_embd": 768,
                "n_head": 12,
                "n_positions": 1024,
                "vocab_size": 50257,
            },
        },
        fixed={"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0},
        positions="n_positions",
    ),
    "llama": Arch(
        config_class="LlamaConfig",
        models={
            "train": "LlamaForCausalLM",
            "generate": "LlamaForCausalLM",
            "classify": "LlamaForSequenceClassification",
        },
        objective="causal",
        sizes={
            "tiny": {
                "hidden_size": 64,
                "intermediate_size": 176,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "num_key_value_heads": 2,
                "max_position_embeddings": 128,
                "vocab_size": 512,
            },
            "small": {
                "hidden_size": 256,
                "intermediate_size": 688,
                "num_hidden_layers": 4,
                "num_attention_heads": 8,
                "num_key_value_heads": 4,
                "max_position_embeddings": 512,
                "vocab_size": 32000,
            },
            "base": {
                "hidden_size": 768,
                "intermediate_size": 2048,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "num_key_value_heads": 4,
                "max_position_embeddings": 2048,
                "vocab_size": 32000,
            },
        },
        fixed={"attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 2},
        positions="max_position_embeddings",
    ),
    "bert": Arch(
        config_class="BertConfig",
        models={"train": "BertForMaskedLM", "classify": "BertForSequenceClassification"},
        objective="masked",
        sizes={
            "tiny": {
                "hidden_size": 64,
                "num_hidden_layers": 2,
                "num_attention_heads": 4,
                "intermediate_size": 256,
                "max_position_embeddings": 128,
                "vocab_size": 512,
            },
            "small": {
                "hidden_size": 256,
                "num_hidden_layers": 4,
                "num_attention_heads": 4,
                "intermediate_size": 1024,
                "max_position_embeddings": 512,
                "vocab_size": 30522,
            },
            # BERT-base (110M)
            "base": {
                "hidden_size": 768,
                "num_hidden_layers": 12,
                "num_attention_heads": 12,
                "intermediate_size": 3072,
                "max_position_embeddings": 512,
                "vocab_size": 30522,
            },
        },
        fixed={"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
        positions="max_position_embeddings",
    ),
    "t5": Arch(
        config_class="T5Config",
        models={"train": "T5ForConditionalGeneration", "generate": "T5ForConditionalGeneration"},
        objective="seq2seq",
        sizes={
            "tiny": {
                "d_model": 64,
                "d_kv": 16,
                "d_ff": 256,
                "num_layers": 2,
                "num_decoder_layers": 2,
                "num_heads": 4,
                "vocab_size": 512,
            },
            "small": {
                "d_model": 256,
                "d_kv": 32,
                "d_ff": 1024,
                "num_layers": 4,
                "num_decoder_layers": 4,
                "num_heads": 8,
                "vocab_size": 32128,
            },
            # t5-small (60M)
            "base": {
                "d_model": 512,
                "d_kv": 64,
                "d_ff": 2048,
                "num_layers": 6,
                "num_decoder_layers": 6,
                "num_heads": 8,
                "vocab_size": 32128,
            },
        },
        fixed={
            "dropout_rate": 0.0,
            "pad_token_id": 0,
            "eos_token_id": 1,
            "decoder_start_token_id": 0,
        },
    ),
}


def available() -> list[str]:
    """Every ``hf:`` name parity knows."""
    names = []
    for arch, spec in ARCHS.items():
        names += [f"hf:{arch}" if task == "train" else f"hf:{arch}-{task}" for task in spec.models]
    return names


def transformers_module() -> Any:
    """transformers, or a WorkloadError naming the extra that installs it."""
    try:
        return importlib.import_module("transformers")
    except ImportError:
        raise WorkloadError(f"hf: workloads need the transformers package: {EXTRA_HINT}") from None


def parse_name(name: str) -> tuple[str, str]:
    """``hf:gpt2-generate`` -> (``gpt2``, ``generate``); WorkloadError names the choices."""
    rest = name.removeprefix("hf:")
    arch, _, task = rest.partition("-")
    task = task or "train"
    if arch not in ARCHS or task not in ARCHS[arch].models:
        raise WorkloadError(
            f"unknown Hugging Face workload {name!r}: use one of {', '.join(available())}"
        )
    return arch, task


def convert(key: str, value: str, default: Any) -> Any:
    """A ``--hf-config`` value typed like the setting's default."""
    text = value.strip()
    try:
        if isinstance(default, bool):
            if text.lower() in ("1", "true", "yes", "on"):
                return True
            if text.lower() in ("0", "false", "no", "off"):
                return False
            raise ValueError(text)
        if isinstance(default, int):
            return int(text)
        if isinstance(default, float):
            return float(text)
        if isinstance(default, str):
            return text
    except ValueError:
        kind = type(default).__name__
        raise WorkloadError(f"--hf-config {key}={value}: {key} takes a {kind}") from None
    try:
        return json.loads(text)
    except ValueError:
        return text


class HfWorkload(LmWorkload):
    """Base of the ``hf:ARCH`` workloads; ``arch``, ``task`` and the class-level tables are set
    per name by :func:`workload_class`."""

    arch: ClassVar[str]
    task: ClassVar[str]

    def __init__(self, spec: WorkloadSpec) -> None:
        super().__init__(replace(spec, overrides=()))
        self.spec = spec
        tf = transformers_module()
        arch = ARCHS[self.arch]
        cls = getattr(tf, arch.config_class)
        defaults = cls()
        aliases: dict[str, str] = dict(getattr(cls, "attribute_map", {}) or {})
        self.new_tokens: int | None = self.config.pop("new_tokens", None)
        hf = dict(self.config)
        for key, value in spec.overrides:
            key = aliases.get(key, key)
            if key != "attn_implementation" and not hasattr(defaults, key):
                raise WorkloadError(
                    f"--hf-config {key}: {arch.config_class} has no setting {key!r}; "
                    f"this size sets {', '.join(sorted(hf))}"
                )
            hf[key] = convert(key, value, hf.get(key, getattr(defaults, key, None)))
        vocab = int(hf["vocab_size"])
        given = {aliases.get(k, k) for k, _ in spec.overrides}
        for key in ("bos_token_id", "eos_token_id", "pad_token_id", "decoder_start_token_id"):
            token = hf.get(key, getattr(defaults, key, None))
            if isinstance(token, int) and token >= vocab and key not in given:
                hf[key] = vocab - 1  # keep special tokens inside a small vocabulary
        if self.task == "classify":
            hf.setdefault("num_labels", 2)
            if arch.objective == "causal":  # the last non-pad token is the one classified
                hf.setdefault("pad_token_id", vocab - 1)
        self.config = {"model": arch.models[self.task], "hf_config": hf}
        if self.new_tokens is not None:
            self.config["new_tokens"] = self.new_tokens
        self.transformers_version = str(tf.__version__)
        self._check(hf)

    def _check(self, hf: dict[str, Any]) -> None:
        arch = ARCHS[self.arch]
        assert self.seq_len is not None
        if int(hf["vocab_size"]) < 8:
            raise WorkloadError(f"--hf-config vocab_size={hf['vocab_size']} must be at least 8")
        needed = self.seq_len + (self.new_tokens or 0)
        if arch.positions and needed > int(hf[arch.positions]):
            raise WorkloadError(
                f"{self.name} needs {needed} positions (sequence length"
                + (" plus new tokens" if self.new_tokens else "")
                + f") but {arch.positions}={hf[arch.positions]}: lower --seq-len or pass "
                f"--hf-config {arch.positions}={needed}"
            )
        if arch.objective == "seq2seq" and self.seq_len < 4:
            raise WorkloadError(f"{self.name} needs --seq-len of at least 4")

    # -- model ------------------------------------------------------------------------
    def hf_config(self) -> Any:
        tf = transformers_module()
        return getattr(tf, ARCHS[self.arch].config_class)(**self.config["hf_config"])

    def build_model(self) -> nn.Module:
        tf = transformers_module()
        model: nn.Module = getattr(tf, self.config["model"])(self.hf_config())
        return model

    def describe(self) -> WorkloadDescription:
        # the library version keys the frozen cache, not the fingerprint: the weights'
        # hash already says whether two versions built the same model
        return replace(super().describe(), packages={"transformers": self.transformers_version})

    # -- what the language-model mixins need -------------------------------------------
    @property
    def objective(self) -> str:
        return "classify" if self.task == "classify" else ARCHS[self.arch].objective

    @property
    def vocab(self) -> int:
        return int(self.config["hf_config"]["vocab_size"])

    @property
    def decoder_start(self) -> int | None:
        if ARCHS[self.arch].objective != "seq2seq":
            return None
        return int(self.config["hf_config"].get("decoder_start_token_id", 0))

    @property
    def n_batches(self) -> int:
        return N_BATCHES

    def tokens(self, count: int, length: int) -> torch.Tensor:
        """Byte tokens of the corpus; ids at or above the vocabulary's last id wrap."""
        g = torch.Generator().manual_seed(self.seed + 1)
        return corpus_windows(count, length, g) % (self.vocab - 1)


class HfTrain(HfWorkload, LmTrain):
    """Training: AdamW over a fixed batch order; the objective follows the architecture."""


class HfGenerate(HfWorkload, LmGenerate):
    """Greedy decoding with the model's key/value cache."""


_DESCRIPTIONS = {
    ("causal", "train"): "{arch} causal LM (transformers), AdamW, byte tokens of real text",
    ("masked", "train"): "{arch} masked LM (transformers), AdamW, 15% of byte tokens masked",
    ("seq2seq", "train"): "{arch} seq2seq (transformers), AdamW, continue the text",
    ("causal", "generate"): "{arch} greedy decoding (transformers), KV cache, fixed length",
    ("seq2seq", "generate"): "{arch} greedy decoding (transformers), KV cache, fixed length",
}


@cache
def workload_class(arch: str, task: str) -> type[HfWorkload]:
    """The Workload class of one ``hf:`` name (made once per name)."""
    spec = ARCHS[arch]
    table = GENERATE_KNOBS if task == "generate" else RUN_KNOBS
    base: type[HfWorkload] = HfGenerate if task == "generate" else HfTrain
    name = f"hf:{arch}" if task == "train" else f"hf:{arch}-{task}"
    description = _DESCRIPTIONS.get(
        (spec.objective, task), "{arch} sequence classification (transformers), AdamW"
    ).format(arch=arch)
    return type(
        f"Hf_{arch}_{task}",
        (base,),
        {
            "__module__": __name__,
            "name": name,
            "kind": "generate" if task == "generate" else "train",
            "description": description,
            "arch": arch,
            "task": task,
            "sizes": {
                size: {**spec.sizes[size], **spec.fixed, **table[size]} for size in spec.sizes
            },
        },
    )
