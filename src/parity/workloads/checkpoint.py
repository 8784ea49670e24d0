"""``hf:PATH`` and ``hf:ORG/NAME``: a team's own checkpoint, read from disk, never fetched.

``PATH`` is a directory holding ``config.json`` and safetensors weights (what
``save_pretrained`` writes); ``ORG/NAME[@REVISION]`` is looked up in the local Hugging
Face cache with ``local_files_only`` (a model that is not cached is a one-line usage
error: parity never downloads). Pickled weights (``pytorch_model.bin``) are refused:
parity never unpickles.

``--task`` says what the model does; it defaults from the config's ``architectures``:

- ``generate``: greedy decoding with the key/value cache (``*ForCausalLM``,
  ``*LMHeadModel``, ``*ForConditionalGeneration``);
- ``classify``: classification logits (``*ForSequenceClassification``);
- ``embed``: the last hidden states mean-pooled with the attention mask (a base model
  such as ``BertModel``);
- ``infer``: one forward pass, its logits or last hidden state (anything else);
- ``train``: AdamW steps with the objective of the saved head (causal, masked or seq2seq
  LM, classification; a base model trains as a masked LM where it can).

The frozen weights are the checkpoint's, loaded in float32 on the CPU; weights a task's
head lacks are initialised from the seed. Dropout is off (every ``*dropout*`` and
``*pdrop*`` setting of the config is 0), so that both sides compute the same function;
``--hf-config KEY=VALUE`` sets any config attribute, dropout included.

The text is ``--data`` (else the corpus that ships with parity) through the
checkpoint's tokenizer (UTF-8 bytes when it has none): consecutive windows for training
and generation, one document per row with an attention mask for ``infer``, ``embed``
and ``classify``. The bytes of the weights, the tokenizer and ``--data`` enter the
fingerprint (hashed once, cached by path, size and mtime).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

import torch
from torch import nn

from parity.errors import WorkloadError
from parity.model.codec import Json, JsonObject
from parity.model.spec import Task, WorkloadSpec
from parity.model.workload import (
    CheckpointSource,
    Origin,
    Sources,
    WorkloadDescription,
    sha256_json,
)
from parity.workloads.base import Workload
from parity.workloads.hf import (
    ARCHS,
    GENERATE_KNOBS,
    RUN_KNOBS,
    convert,
    parse_name,
    transformers_module,
    workload_class,
)
from parity.workloads.lm import LmGenerate, LmInfer, LmTrain, LmWorkload, logits_of, mean_pool
from parity.workloads.sample import (
    ByteTokens,
    DataSource,
    HfTokens,
    Tokens,
    files_digest,
    packed,
    parse_data,
)
from parity.workloads.sample import rows as document_rows

TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
    "vocab.json",
    "merges.txt",
    "spiece.model",
    "tokenizer.model",
    "sentencepiece.bpe.model",
)
PICKLES = ("*.bin", "*.pt", "*.pth", "*.ckpt")
#: a model class per objective: the name of transformers' mapping from model type
MAPPINGS = {
    "causal": "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES",
    "masked": "MODEL_FOR_MASKED_LM_MAPPING_NAMES",
    "seq2seq": "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES",
    "classify": "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES",
    "base": "MODEL_MAPPING_NAMES",
}
_HUB_ID = re.compile(r"^[\w.-]+(/[\w.-]+)?(@[\w./-]+)?$")


@dataclass(frozen=True, kw_only=True, slots=True)
class Location:
    """Where a checkpoint lives and what the verdict calls it."""

    path: Path
    ident: str  # the repository id, or the directory's name
    origin: Origin


def locate(rest: str) -> Location:
    """A directory, else a model in the local Hugging Face cache; WorkloadError if neither."""
    path = Path(rest).expanduser()
    if path.is_dir():
        return Location(path=path.resolve(), ident=path.resolve().name, origin="directory")
    looks_like_path = rest.startswith((".", "/", "~")) or not _HUB_ID.match(rest)
    if looks_like_path:
        raise WorkloadError(f"hf:{rest}: no such directory: check the path")
    repo, _, revision = rest.partition("@")
    hub = importlib.import_module("huggingface_hub")
    try:
        snapshot = hub.snapshot_download(repo, revision=revision or None, local_files_only=True)
    except (hub.errors.LocalEntryNotFoundError, OSError, ValueError):
        raise WorkloadError(
            f"unknown Hugging Face workload 'hf:{rest}': not a directory, and not in the local "
            f"Hugging Face cache (parity never downloads): fetch it once with `hf download "
            f"{repo}`, pass a directory (hf:./my-model), or use a built-in architecture "
            "(parity workloads)"
        ) from None
    return Location(path=Path(snapshot), ident=repo, origin="hub cache")


def check_index(root: Path, where: str) -> None:
    """A sharded checkpoint's ``*.index.json`` maps every weight to a safetensors file of
    the directory itself (a plain name, a regular file): an index that points at a pickle
    (``pytorch_model.bin``) or outside is refused, whatever ``use_safetensors`` would do."""
    for index in sorted(root.glob("*.index.json")):
        try:
            mapped = json.loads(index.read_text(encoding="utf-8")).get("weight_map", {})
            files = {str(v) for v in mapped.values()} if isinstance(mapped, dict) else {""}
        except (OSError, ValueError, AttributeError) as exc:
            raise WorkloadError(f"{where}: {index.name} does not load ({exc})") from None
        for name in sorted(files):
            target = root / name
            if (
                not name.endswith(".safetensors")
                or "/" in name
                or "\\" in name
                or name.startswith(".")
                or target.is_symlink()
                or not target.is_file()
            ):
                raise WorkloadError(
                    f"{where}: {index.name} maps weights to {name!r}, not a safetensors file "
                    "of the checkpoint (parity never unpickles): save the model with "
                    "save_pretrained(dir), which writes safetensors"
                )


class Unpickling(WorkloadError):
    """What a library tried to unpickle while parity loaded a checkpoint."""


@contextlib.contextmanager
def no_unpickling(where: str) -> Iterator[None]:
    """While a library loads a checkpoint: ``torch.load`` and ``pickle`` refuse, so that
    no index, config or library default ever unpickles a file (parity's rule, whatever
    the library underneath would do)."""
    import pickle

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise Unpickling(
            f"{where}: loading it would unpickle a file (a .bin, .pt or pickle), which "
            "parity never does: save the model with save_pretrained(dir), which writes "
            "safetensors"
        )

    saved = (torch.load, pickle.load, pickle.loads)
    torch.load, pickle.load, pickle.loads = refuse, refuse, refuse
    try:
        yield
    finally:
        torch.load, pickle.load, pickle.loads = saved


def config_name(location: Location, config: dict[str, Any]) -> str:
    """What a checkpoint is called: a hub model's repository id; a directory's config names
    it (``_name_or_path`` where it is a repository id, else its first architecture), the
    directory's name only where the config names nothing (a directory called ``hf`` or
    ``checkpoint-500`` says little)."""
    if location.origin != "directory":
        return location.ident
    source = config.get("_name_or_path")
    if (
        isinstance(source, str)
        and "/" in source
        and _HUB_ID.match(source)
        and not Path(source).is_absolute()
    ):
        return source
    architectures = config.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        return architectures[0]
    return location.ident


def default_task(architectures: list[str] | None) -> Task:
    """The task a checkpoint's saved head implies."""
    name = (architectures or [""])[0]
    if name.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")):
        return "generate"
    if name.endswith("ForSequenceClassification"):
        return "classify"
    if name.endswith("Model") and "For" not in name:
        return "embed"
    return "infer"


def model_class(tf: Any, objective: str, model_type: str) -> str | None:
    """transformers' class for a model type and objective, or None."""
    names = getattr(
        importlib.import_module("transformers.models.auto.modeling_auto"), MAPPINGS[objective]
    )
    found = names.get(model_type)
    found = found[0] if isinstance(found, (tuple, list)) else found
    return found if isinstance(found, str) and hasattr(tf, found) else None


def train_objective(tf: Any, hf: Any) -> str:
    """What ``train`` means for a checkpoint: the objective of its saved head."""
    name = (hf.architectures or [""])[0]
    if getattr(hf, "is_encoder_decoder", False):
        return "seq2seq"
    for suffix, objective in (
        ("ForSequenceClassification", "classify"),
        ("ForMaskedLM", "masked"),
        ("ForPreTraining", "masked"),
        ("ForCausalLM", "causal"),
        ("LMHeadModel", "causal"),
    ):
        if name.endswith(suffix):
            return objective
    for objective in ("masked", "causal"):  # a base model: a language-model head on top
        if model_class(tf, objective, hf.model_type):
            return objective
    raise WorkloadError(
        f"--task train: transformers has no language-model head for {hf.model_type}: use "
        "--task embed or infer, or a workload file with your own loss"
    )


@contextlib.contextmanager
def quiet(tf: Any) -> Iterator[None]:
    """transformers without progress bars and load reports (restored afterwards)."""
    log = tf.utils.logging
    level, bars = log.get_verbosity(), log.is_progress_bar_enabled()
    log.set_verbosity_error()
    log.disable_progress_bar()
    try:
        yield
    finally:
        log.set_verbosity(level)
        if bars:
            log.enable_progress_bar()


def corpus_source() -> DataSource:
    """The text that ships with parity, when no ``--data`` is given."""
    path = Path(str(resources.files("parity.workloads").joinpath("data/corpus.txt")))
    return DataSource(path=path, format="text", field="text")


class Checkpoint(LmWorkload):
    """A checkpoint on disk; ``location`` and ``task`` are set per class
    (:func:`checkpoint_class`)."""

    location: ClassVar[Location]
    task: ClassVar[Task]
    takes_data: ClassVar[bool] = True
    takes_task: ClassVar[bool] = True

    def __init__(self, spec: WorkloadSpec) -> None:
        tf = transformers_module()
        where = f"hf:{self.location.ident}"
        self.weight_files = sorted(self.location.path.glob("*.safetensors"))
        if not self.weight_files:
            pickled = [p.name for g in PICKLES for p in self.location.path.glob(g)]
            raise WorkloadError(
                f"{where} holds no safetensors weights"
                + (f" (only {', '.join(pickled)}; parity never unpickles)" if pickled else "")
                + ": save the model with save_pretrained(dir), which writes safetensors"
            )
        check_index(self.location.path, where)
        try:
            with quiet(tf), no_unpickling(where):
                self.hf = tf.AutoConfig.from_pretrained(self.location.path, local_files_only=True)
        except (OSError, ValueError, KeyError) as exc:
            raise WorkloadError(f"{where}: config.json does not load: {exc}") from None
        for key, value in self.hf.to_dict().items():  # both sides compute one function
            if ("dropout" in key or "pdrop" in key) and isinstance(value, float):
                setattr(self.hf, key, 0.0)
        for key, value in spec.overrides:
            if not hasattr(self.hf, key):
                raise WorkloadError(f"--hf-config {key}: {type(self.hf).__name__} has no {key!r}")
            setattr(self.hf, key, convert(key, value, getattr(self.hf, key)))
        super().__init__(replace(spec, overrides=()))
        self.source = parse_data(spec.data) if spec.data else None
        self.tokenizer_files = [
            self.location.path / n for n in TOKENIZER_FILES if (self.location.path / n).is_file()
        ]
        self._tokens: Tokens | None = None
        self._sources: Sources | None = None
        self.objective_ = train_objective(tf, self.hf) if self.task == "train" else self.task
        self.class_name = self._class_name(tf)
        if not isinstance(getattr(self.hf, "vocab_size", None), int):
            raise WorkloadError(f"{where}: config.json has no vocab_size: not a text model")
        new_tokens = self.config.get("new_tokens")
        self.new_tokens: int | None = new_tokens
        self.config = {
            "task": self.task,
            "model": self.class_name,
            "hf_config": self._config_json(),
            "data": self.source.describe() if self.source else {"format": "parity corpus"},
            "tokens": "tokenizer" if self.tokenizer_files else "bytes",
            **({"new_tokens": new_tokens} if new_tokens is not None else {}),
        }
        self.transformers_version = str(tf.__version__)
        self._check_positions()

    def _class_name(self, tf: Any) -> str:
        objective = {
            "generate": "seq2seq" if getattr(self.hf, "is_encoder_decoder", False) else "causal",
            "embed": "base",
            "infer": None,
        }.get(self.task, self.objective_)
        saved = (self.hf.architectures or [None])[0]
        if objective is None:  # infer: the class it was saved as
            found = (
                saved
                if saved and hasattr(tf, saved)
                else model_class(tf, "base", self.hf.model_type)
            )
        else:
            found = model_class(tf, objective, self.hf.model_type)
        if found is None:
            raise WorkloadError(
                f"--task {self.task}: transformers has no {objective or 'base'} model class for "
                f"model type {self.hf.model_type!r}: pick another --task"
            )
        return found

    def _config_json(self) -> JsonObject:
        data: JsonObject = json.loads(self.hf.to_json_string(use_diff=False))
        for key in ("_name_or_path", "transformers_version", "_commit_hash"):
            data.pop(key, None)
        return data

    def _check_positions(self) -> None:
        assert self.seq_len is not None
        needed = self.seq_len + (self.new_tokens or 0)
        for key in ("n_positions", "max_position_embeddings"):
            limit = getattr(self.hf, key, None)
            if isinstance(limit, int) and needed > limit:
                raise WorkloadError(
                    f"hf:{self.location.ident} needs {needed} positions but {key}={limit}: "
                    "lower --seq-len" + (" or the new tokens" if self.new_tokens else "")
                )

    # -- model ------------------------------------------------------------------------
    def initial_model(self) -> nn.Module:
        """The checkpoint's weights, in float32 on the CPU."""
        tf = transformers_module()
        cls = getattr(tf, self.class_name)
        check_index(self.location.path, f"hf:{self.location.ident}")
        try:
            with quiet(tf), no_unpickling(f"hf:{self.location.ident}"):
                model: nn.Module = cls.from_pretrained(
                    self.location.path,
                    config=self.hf,
                    local_files_only=True,
                    use_safetensors=True,
                    dtype=torch.float32,
                )
        except Unpickling:
            raise
        except (OSError, ValueError, RuntimeError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            raise WorkloadError(
                f"hf:{self.location.ident}: {self.class_name} does not load: "
                f"{type(exc).__name__}: {first}"
            ) from None
        return model

    def build_model(self) -> nn.Module:
        """The architecture alone (every side loads the frozen weights into it)."""
        tf = transformers_module()
        with quiet(tf):
            model: nn.Module = getattr(tf, self.class_name)(self.hf)
        return model.float()

    def describe(self) -> WorkloadDescription:
        # the library version keys the frozen cache, not the fingerprint (the weights'
        # hash says whether two versions loaded the same model)
        return replace(
            super().describe(),
            checkpoint=CheckpointSource(origin=self.location.origin, id=self.location.ident),
            task=self.task,
            packages={"transformers": self.transformers_version},
        )

    def sources(self) -> Sources:
        """The weights' files; the tokenizer's and ``--data`` (hashed once, cached)."""
        if self._sources is None:
            root = self.location.path
            index = sorted(root.glob("*.safetensors.index.json"))
            data: list[Json] = []
            if self.tokenizer_files:
                data.append(files_digest(root, self.tokenizer_files))
            if self.source is not None:
                data.append(self.source.digest())
            self._sources = Sources(
                weights=files_digest(root, self.weight_files + index),
                data=sha256_json(data) if data else None,
            )
        return self._sources

    # -- tokens -----------------------------------------------------------------------
    @property
    def tokenizer(self) -> Tokens:
        """The checkpoint's tokenizer (loaded once, local files only), else bytes."""
        if self._tokens is None:
            if not self.tokenizer_files:
                self._tokens = ByteTokens()
            else:
                tf = transformers_module()
                try:
                    with quiet(tf):
                        tok = tf.AutoTokenizer.from_pretrained(
                            self.location.path, local_files_only=True
                        )
                except (OSError, ValueError, KeyError) as exc:
                    raise WorkloadError(
                        f"hf:{self.location.ident}: its tokenizer does not load: {exc}"
                    ) from None
                self._tokens = HfTokens(tok)
        return self._tokens

    def _in_vocab(self, t: torch.Tensor) -> torch.Tensor:
        bytes_ = isinstance(self.tokenizer, ByteTokens)
        return t % (self.vocab - 1) if bytes_ and self.vocab <= 256 else t

    @property
    def objective(self) -> str:
        return self.objective_

    @property
    def vocab(self) -> int:
        return int(self.hf.vocab_size)

    @property
    def mask_id(self) -> int:
        tok = self.tokenizer
        found = tok.tokenizer.mask_token_id if isinstance(tok, HfTokens) else None
        return int(found) if found is not None else self.vocab - 1

    @property
    def decoder_start(self) -> int | None:
        if not getattr(self.hf, "is_encoder_decoder", False):
            return None
        start = self.hf.decoder_start_token_id
        return int(start if start is not None else (self.hf.pad_token_id or 0))

    @property
    def n_batches(self) -> int:
        return self.steps  # one batch per step: the sample follows --steps and --batch-size

    @property
    def batches_follow_steps(self) -> bool:
        return True

    def tokens(self, count: int, length: int) -> torch.Tensor:
        return self._in_vocab(packed(self.source or corpus_source(), self.tokenizer, count, length))

    def rows(self, count: int) -> dict[str, torch.Tensor]:
        assert self.seq_len is not None
        found = document_rows(self.source or corpus_source(), self.tokenizer, count, self.seq_len)
        return {**found, "input_ids": self._in_vocab(found["input_ids"])}

    def labels_of(self, windows: torch.Tensor) -> torch.Tensor:
        """Classification labels from the tokens: is the row's id sum above the median?"""
        total = windows.sum(dim=1)
        return (total > total.median()).long()

    def outputs(self, out: Any, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        if self.task == "embed":
            hidden = out.last_hidden_state if "last_hidden_state" in out else out[0]
            return {"embeddings": mean_pool(hidden, batch["attention_mask"])}
        if "logits" in out:
            return {"logits": logits_of(out)}
        return {
            "last_hidden_state": out.last_hidden_state if "last_hidden_state" in out else out[0]
        }


class CheckpointTrain(Checkpoint, LmTrain):
    """AdamW steps with the objective of the saved head."""


class CheckpointGenerate(Checkpoint, LmGenerate):
    """Greedy decoding with the model's key/value cache."""


class CheckpointInfer(Checkpoint, LmInfer):
    """Forward passes over rows of named inputs."""


@cache
def checkpoint_class(location: Location, task: Task, name: str | None = None) -> type[Checkpoint]:
    """The Workload class of one checkpoint and task (made once per pair)."""
    base: type[Checkpoint] = CheckpointInfer
    if task == "train":
        base = CheckpointTrain
    elif task == "generate":
        base = CheckpointGenerate
    table = GENERATE_KNOBS if task == "generate" else RUN_KNOBS
    return type(
        f"Checkpoint_{task}",
        (base,),
        {
            "__module__": __name__,
            "name": f"hf:{name or location.ident}",
            "kind": task if task in ("train", "generate") else "infer",
            "description": f"checkpoint {name or location.ident} ({location.origin} "
            f"{location.ident}), task {task}",
            "location": location,
            "task": task,
            "sizes": table,
        },
    )


def resolve_checkpoint(spec: WorkloadSpec) -> Workload:
    """The workload of an ``hf:PATH`` or ``hf:ORG/NAME`` spec."""
    transformers_module()  # the extra's hint first
    location = locate(spec.name.removeprefix("hf:"))
    config_file = location.path / "config.json"
    if not config_file.is_file():
        raise WorkloadError(
            f"hf:{location.ident} has no config.json: save the model with save_pretrained(dir)"
        )
    try:
        config = json.loads(config_file.read_text())
    except ValueError as exc:
        raise WorkloadError(f"hf:{location.ident}: config.json is not JSON: {exc}") from None
    if not isinstance(config, dict):
        raise WorkloadError(f"hf:{location.ident}: config.json is not a JSON object")
    task = spec.task or default_task(config.get("architectures"))
    return checkpoint_class(location, task, config_name(location, config))(spec)


def resolve_hf(spec: WorkloadSpec) -> Workload:
    """The workload an ``hf:`` spec names (registered as the ``hf`` prefix): a built-in
    architecture (``hf:gpt2-generate``), else a checkpoint (``hf:PATH``, ``hf:ORG/NAME``)."""
    rest = spec.name.removeprefix("hf:")
    if rest.partition("-")[0] not in ARCHS or rest.startswith((".", "/", "~")):
        return resolve_checkpoint(spec)
    arch, task = parse_name(spec.name)
    transformers_module()
    return workload_class(arch, task)(spec)
