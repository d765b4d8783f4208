"""Where an ``hf`` model comes from, who it is, and loading it (transformers, imported lazily).

A source is the bundled SmolLM2 GGUF (``@smollm2``), a local ``.gguf`` file, a local checkpoint
directory (optionally with ``gguf_file=`` naming a GGUF inside it), or a Hugging Face hub id
(``org/name``; with ``gguf_file=`` only that file is fetched). Hub ids are looked up in the local
Hugging Face cache and downloaded only when ``HF_HUB_OFFLINE`` is not set.

GGUF files are dequantised by transformers (to float32). That conversion is slow (transformers
parses the whole GGUF vocabulary in Python: 40-120 s for SmolLM2-135M on two cores), so the
converted checkpoint is kept in ``$CALIPERS_HOME/hf-gguf/<sha256 of the GGUF>/`` (safetensors
plus tokenizer, about 4 bytes per parameter) and later loads read it in a few seconds; the
``cache=off`` option skips the copy.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from calipers._util.home import calipers_home, make_folder
from calipers.errors import ConfigError, ModelLoadError
from calipers.models._gguf import (
    bundled_smollm2,
    check_gguf,
    file_sha256,
    quantization_name,
    read_metadata,
)
from calipers.types import ModelIdentity

__all__ = [
    "HfSpec",
    "LocalModel",
    "hf_home_cache",
    "import_hf",
    "load_model",
    "load_tokenizer",
    "parse_spec",
    "resolve_local",
    "source_identity",
]

INSTALL_HINT = "pip install 'calipers[hf]'  (install the torch build for your machine first)"
_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
_WEIGHTS = ("*.safetensors",)
_HUB_FILES = ["*.json", "*.safetensors", "*.jinja", "*.model", "*.txt", "*.tiktoken"]
_OFF = {"0", "off", "false", "no"}
_CONVERTED = "calipers-gguf-source.json"


class HfSpec(BaseModel):
    """``hf:SOURCE[,key=value...]``: what the user asked for, validated."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str = Field(min_length=1)
    gguf_file: str | None = None
    revision: str | None = None
    dtype: Literal["float32", "bfloat16", "float16"] = "float32"
    batch: int = Field(16, ge=1, le=1024)
    cache: bool = True
    kernels: Literal["onednn", "torch"] = "onednn"


def parse_spec(rest: str) -> HfSpec:
    """``SOURCE,gguf_file=F,revision=R,dtype=float32,batch=16,cache=off,kernels=torch``."""
    source, *opts = rest.split(",")
    values: dict[str, Any] = {"source": source.strip()}
    for opt in opts:
        key, sep, value = opt.partition("=")
        key = key.strip()
        if not sep or key not in HfSpec.model_fields or key == "source":
            raise ConfigError(
                f"Unknown hf model option {opt!r}.",
                hint="Options: gguf_file=NAME, revision=REV, dtype=float32|bfloat16|float16, "
                "batch=N, cache=off, kernels=onednn|torch; e.g. hf:@smollm2,batch=16.",
            )
        values[key] = value.strip().lower() not in _OFF if key == "cache" else value.strip()
    try:
        return HfSpec.model_validate(values)
    except ValueError as e:
        raise ConfigError(
            f"Bad hf model spec {rest!r}: {e}", hint="e.g. hf:@smollm2,dtype=float32,batch=16"
        ) from None


@dataclass(frozen=True)
class LocalModel:
    """A source resolved to files on this machine: a checkpoint ``directory`` and, for GGUF,
    the file in it. ``hub_id``/``revision`` say where a hub download came from."""

    directory: Path
    gguf_file: str | None
    hub_id: str | None = None
    revision: str | None = None

    @property
    def gguf_path(self) -> Path | None:
        return self.directory / self.gguf_file if self.gguf_file else None


def import_hf(*, gguf: bool = False) -> tuple[Any, Any]:
    """``(torch, transformers)``, or a :class:`ModelLoadError` with the install hint."""
    names = ["torch", "transformers"] + (["gguf", "accelerate"] if gguf else [])
    missing = []
    for name in names:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        raise ModelLoadError(
            f"The hf provider needs {', '.join(missing)}, which "
            f"{'is' if len(missing) == 1 else 'are'} not installed.",
            hint=INSTALL_HINT,
        )
    import torch
    import transformers

    return torch, transformers


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "true", "yes"}


def _from_hub(spec: HfSpec) -> LocalModel:
    import_hf()
    from huggingface_hub import hf_hub_download, snapshot_download

    offline = _offline()
    try:
        if spec.gguf_file:
            path = Path(
                hf_hub_download(
                    spec.source, spec.gguf_file, revision=spec.revision, local_files_only=offline
                )
            )
            return LocalModel(path.parent, path.name, spec.source, path.parent.name)
        folder = Path(
            snapshot_download(
                spec.source,
                revision=spec.revision,
                allow_patterns=_HUB_FILES,
                local_files_only=offline,
            )
        )
    except Exception as e:  # huggingface_hub raises many types (LocalEntryNotFound, HTTP...)
        why = (
            "it is not in the local Hugging Face cache and HF_HUB_OFFLINE=1 forbids downloading it"
            if offline
            else f"it could not be fetched ({type(e).__name__})"
        )
        raise ModelLoadError(
            f"Cannot load hf model {spec.source!r}: {why}.",
            hint=f"Download it while online (`hf download {spec.source}`), or pass a local "
            "checkpoint directory or .gguf file: hf:PATH.",
        ) from None
    return LocalModel(folder, None, spec.source, folder.name)


def resolve_local(spec: HfSpec) -> LocalModel:
    """The files behind ``spec`` (downloading a hub id when that is allowed)."""
    if spec.source.startswith("@"):
        if spec.source != "@smollm2":
            raise ConfigError(f"Unknown bundled model {spec.source!r}.", hint="Known: @smollm2.")
        path = bundled_smollm2()
        return LocalModel(path.parent, path.name)
    path = Path(spec.source).expanduser()
    if path.is_file():
        check_gguf(path)
        return LocalModel(path.parent.resolve(), path.name)
    if path.is_dir():
        if spec.gguf_file:
            check_gguf(path / spec.gguf_file)
        elif not (path / "config.json").is_file():
            raise ModelLoadError(
                f"{path} has no config.json: not a transformers checkpoint.",
                hint="Pass a checkpoint directory, a .gguf file, or gguf_file=.",
            )
        return LocalModel(path.resolve(), spec.gguf_file)
    if _HUB_ID.match(spec.source):
        return _from_hub(spec)
    raise ModelLoadError(
        f"hf model {spec.source!r} is neither a local path nor a hub id.",
        hint="Use hf:@smollm2, hf:PATH.gguf, hf:CHECKPOINT_DIR or hf:ORG/NAME.",
    )


def _weights_hash(directory: Path) -> str | None:
    files = sorted(p for pattern in _WEIGHTS for p in directory.glob(pattern))
    if not files:
        return None
    lines = "".join(f"{p.name}:{file_sha256(p)}\n" for p in files)
    return hashlib.sha256(lines.encode()).hexdigest()


def _dir_chat_template(directory: Path) -> str | None:
    jinja = directory / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = directory / "tokenizer_config.json"
    if config.is_file():
        value = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
        return value if isinstance(value, str) else None
    return None


def source_identity(spec: HfSpec, local: LocalModel) -> ModelIdentity:
    """Name, weights hash, quantization of the source and chat template hash, without
    loading weights (a GGUF's header, a directory's files)."""
    extra: dict[str, str] = {"dtype": spec.dtype}
    gguf = local.gguf_path
    if gguf is not None:
        info = read_metadata(gguf)
        template = info.get_str("tokenizer.chat_template")
        extra |= {"gguf_file": gguf.name, "dequantised": "true"}
        name = info.get_str("general.name") or gguf.stem
        sha: str | None = file_sha256(gguf)
        quant = quantization_name(info.metadata, gguf)
    else:
        template = _dir_chat_template(local.directory)
        name = local.hub_id or local.directory.name
        sha, quant = _weights_hash(local.directory), None
    if local.revision:
        extra["revision"] = local.revision
    return ModelIdentity(
        provider="hf",
        name=name,
        sha256=sha,
        quantization=quant,
        chat_template_hash=hashlib.sha256(template.encode()).hexdigest()[:16] if template else None,
        extra=extra,
    )


def hf_home_cache() -> Path:
    """Where converted GGUF checkpoints are kept: ``$CALIPERS_HOME/hf-gguf``."""
    return calipers_home() / "hf-gguf"


def _converted_dir(local: LocalModel) -> Path | None:
    gguf = local.gguf_path
    return hf_home_cache() / file_sha256(gguf)[:32] if gguf is not None else None


def load_tokenizer(spec: HfSpec, local: LocalModel) -> Any:
    """The tokenizer (from the converted copy of a GGUF when there is one)."""
    _torch, transformers = import_hf(gguf=local.gguf_file is not None)
    converted = _converted_dir(local) if spec.cache else None
    try:
        if converted is not None and (converted / _CONVERTED).is_file():
            return transformers.AutoTokenizer.from_pretrained(converted, local_files_only=True)
        return transformers.AutoTokenizer.from_pretrained(
            local.directory, gguf_file=local.gguf_file, local_files_only=True
        )
    except (OSError, ValueError) as e:
        raise ModelLoadError(
            f"transformers cannot load the tokenizer of {spec.source} ({e}).",
            hint="Check the checkpoint has tokenizer files.",
        ) from None


def load_model(spec: HfSpec, local: LocalModel, tokenizer: Any) -> Any:
    """The model in ``spec.dtype``, in eval mode. A GGUF is dequantised once and the result
    kept (see the module docstring)."""
    torch, transformers = import_hf(gguf=local.gguf_file is not None)
    dtype = getattr(torch, spec.dtype)
    auto = transformers.AutoModelForCausalLM
    converted = _converted_dir(local) if spec.cache else None
    try:
        if converted is not None and (converted / _CONVERTED).is_file():
            model = auto.from_pretrained(converted, dtype=dtype, local_files_only=True)
        elif local.gguf_file is not None:
            model = auto.from_pretrained(
                local.directory,
                gguf_file=local.gguf_file,
                dtype=torch.float32,
                local_files_only=True,
            )
            if converted is not None:
                _save_converted(model, tokenizer, local, converted)
            model = model.to(dtype)
        else:
            model = auto.from_pretrained(local.directory, dtype=dtype, local_files_only=True)
    except (OSError, ValueError, KeyError, RuntimeError) as e:
        raise ModelLoadError(
            f"transformers cannot load {spec.source} ({e}).",
            hint="Check the checkpoint is complete and its architecture is "
            "supported by the installed transformers.",
        ) from None
    return model.eval()


def _save_converted(model: Any, tokenizer: Any, local: LocalModel, target: Path) -> None:
    """Keep the dequantised checkpoint: written to a temporary folder, then renamed, so a
    reader never sees half a copy."""
    model.hf_quantizer = None  # the weights are dense now; transformers refuses otherwise
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    make_folder(target.parent, "the folder of converted checkpoints")
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    try:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        gguf = local.gguf_path
        assert gguf is not None
        (tmp / _CONVERTED).write_text(
            json.dumps(
                {"gguf": str(gguf), "sha256": file_sha256(gguf), "dtype": "float32"}, indent=2
            )
        )
        os.replace(tmp, target)
    except OSError:
        pass  # another process won the race, or the disk is full: the model is loaded anyway
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
