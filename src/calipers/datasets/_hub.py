"""Loading a benchmark from the Hugging Face hub with ``datasets`` (an optional extra).

:func:`load_hub_rows` is the one place calipers calls ``datasets.load_dataset``. It imports
``datasets`` lazily, turns every way the call can fail into a :class:`DataError` that names the
benchmark, the dataset id, config and split and says what to do (install the extra, go online,
``huggingface-cli login`` for a gated dataset, or ``--data-dir`` with the original files), and
records where the rows came from (:class:`HubSource`: id, config, split, revision and the commit
``datasets`` resolved), so a task can stamp it on its samples (``metadata["data_source"]``) and
the methodology card can carry it.

A repository that still ships a loading script (``<name>.py``) cannot be loaded by ``datasets``
4.0 and later. For such a benchmark calipers reads the repository's raw data file instead
(``data_file=``: the packaged ``json`` builder on ``hf://datasets/<id>@<revision>/<file>``),
which every ``datasets`` version supports.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from calipers.errors import DataError
from calipers.types import Sample

__all__ = [
    "DATA_SOURCE_KEY",
    "HubRows",
    "HubSource",
    "data_source",
    "hub_error",
    "load_hub_rows",
]

DATA_SOURCE_KEY = "data_source"
"""The ``Sample.metadata`` key a hub-loaded sample's :attr:`HubSource.uri` is stored under."""

_INSTALL = "pip install 'calipers[hub]'"
_SHA = re.compile(r"(?:^|[/\\])([0-9a-f]{40})(?:[/\\]|$)")


@dataclass(frozen=True)
class HubSource:
    """Where hub rows came from. ``commit`` is the dataset repository's commit that
    ``datasets`` resolved (None when it does not say)."""

    dataset_id: str
    config: str | None
    split: str
    revision: str | None = None
    commit: str | None = None
    data_file: str | None = None
    """A raw file in the repository read instead of a config (``split`` then names the
    benchmark's split the file holds)."""

    @property
    def uri(self) -> str:
        """``hf://datasets/<id>@<commit or revision>/<config>/<split>``, or ``.../<data_file>``
        for a raw file (one line, stable)."""
        rev = self.commit or self.revision or "main"
        if self.data_file:
            return f"hf://datasets/{self.dataset_id}@{rev}/{self.data_file}"
        return f"hf://datasets/{self.dataset_id}@{rev}/{self.config or 'default'}/{self.split}"

    @property
    def file_url(self) -> str | None:
        """The ``hf://`` address ``datasets`` reads a raw ``data_file`` from (None without)."""
        if not self.data_file:
            return None
        return f"hf://datasets/{self.dataset_id}@{self.revision or 'main'}/{self.data_file}"

    def describe(self) -> str:
        if self.data_file:
            return f"{self.dataset_id}, file {self.data_file} ({self.split} split)"
        cfg = f", config {self.config}" if self.config else ""
        return f"{self.dataset_id}{cfg}, split {self.split}"


@dataclass(frozen=True)
class HubRows:
    """The rows of one split (plain dicts in the hub dataset's schema) and their source."""

    rows: tuple[dict[str, Any], ...]
    source: HubSource

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)


def data_source(samples: Iterable[Sample]) -> str | None:
    """The hub sources stamped on ``samples`` (``;``-joined, in first-seen order), or None
    when they were read from local files."""
    seen: dict[str, None] = {}
    for s in samples:
        uri = s.metadata.get(DATA_SOURCE_KEY)
        if isinstance(uri, str):
            seen.setdefault(uri)
    return "; ".join(seen) or None


def _datasets(benchmark: str, where: str, how_to_get: str) -> Any:
    try:
        return importlib.import_module("datasets")
    except ImportError:
        raise DataError(
            f"{benchmark}: no local data directory is set, and loading {where} from the "
            "Hugging Face hub needs the optional package `datasets`, which is not installed.",
            hint=f"Install it ({_INSTALL}), or pass --data-dir DIR (or set CALIPERS_DATA) "
            f"with {benchmark}/ inside. {how_to_get}",
        ) from None


def _commit(ds: Any, revision: str | None) -> str | None:
    """The commit ``datasets`` resolved: the 40-hex folder of its cache files, else the
    revision when that is itself a commit."""
    for f in getattr(ds, "cache_files", None) or ():
        m = _SHA.search(str(f.get("filename", "")) if isinstance(f, dict) else "")
        if m:
            return m.group(1)
    if revision and re.fullmatch(r"[0-9a-f]{40}", revision):
        return revision
    return None


def _is_gated(e: BaseException) -> bool:
    """A gated-repository refusal: ``GatedRepoError`` or a message saying "gated", on the
    error or its causes."""
    seen: BaseException | None = e
    for _ in range(4):
        if seen is None:
            return False
        if (
            any(c.__name__ == "GatedRepoError" for c in type(seen).__mro__)
            or "gated" in str(seen).lower()
        ):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _available(text: str) -> str:
    """The list of names a ``datasets`` message offers ("Available: [...]"), if any."""
    m = re.search(r"\[([^\[\]]*)\]", text)
    return f" Available: {m.group(1)}." if m else ""


_UNREACHABLE = frozenset(
    {"OfflineModeIsEnabled", "LocalEntryNotFoundError", "ConnectError", "ConnectTimeout"}
)
"""Exception class names (huggingface_hub's, httpx's) that mean the hub was not reached."""


def hub_error(benchmark: str, e: BaseException, source: HubSource, how_to_get: str) -> DataError:
    """A clear DataError for a failed ``load_dataset`` (public for tests)."""
    where = source.describe()
    local = f"or pass --data-dir DIR (or set CALIPERS_DATA) with {benchmark}/ inside. {how_to_get}"
    head = (
        f"{benchmark}: no local data directory is set, and loading {where} from the Hugging "
        "Face hub failed"
    )
    text = str(e)
    if _is_gated(e):
        page = f"https://huggingface.co/datasets/{source.dataset_id}"
        return DataError(
            f"{head}: the dataset is gated and this account has no access to it.",
            hint=f"Accept its terms at {page}, then run `huggingface-cli login` (or set "
            f"HF_TOKEN); {local}",
        )
    if (
        isinstance(e, ConnectionError)
        or "offline" in text.lower()
        or type(e).__name__ in _UNREACHABLE
    ):
        return DataError(
            f"{head}: the hub cannot be reached (offline, or HF_HUB_OFFLINE is set) and the "
            "dataset is not in the local cache.",
            hint=f"Go online once (the dataset is then cached), {local}",
        )
    if "scripts are no longer supported" in text:
        return DataError(
            f"{head}: the repository loads through a Python script, which the installed "
            "`datasets` (4.0 or later) no longer runs.",
            hint="This is a calipers bug for a built-in benchmark (it should read the "
            "repository's data files): please report it. Meanwhile `pip install 'datasets<4'`, "
            f"{local}",
        )
    if type(e).__name__ == "DatasetNotFoundError":
        return DataError(
            f"{head}: the hub has no dataset {source.dataset_id!r} (or it is private): {text}",
            hint=f"Check the name, {local}",
        )
    if isinstance(e, ValueError) and "split" in text.lower():
        return DataError(
            f"{head}: it has no split {source.split!r}.{_available(text)}",
            hint=f"This is a calipers bug if the split name is built in; {local}",
        )
    if isinstance(e, ValueError) and "config" in text.lower():
        return DataError(
            f"{head}: it has no config {source.config!r}.{_available(text)}",
            hint=f"This is a calipers bug if the config name is built in; {local}",
        )
    return DataError(f"{head}: {type(e).__name__}: {text}", hint=f"Retry, {local}")


def load_hub_rows(
    benchmark: str,
    dataset_id: str,
    *,
    config: str | None = None,
    split: str,
    revision: str | None = None,
    data_file: str | None = None,
    how_to_get: str,
) -> HubRows:
    """All rows of ``dataset_id`` (``config``, ``split``, optional ``revision``) as plain
    dicts in the hub schema, with their :class:`HubSource`. With ``data_file`` (a JSON Lines
    file's path in the repository) that file's rows instead, whatever the repository's
    configs. Every failure is a DataError naming ``benchmark`` and saying what to do;
    ``how_to_get`` (the benchmark's local files) ends the hint."""
    requested = HubSource(dataset_id, config, split, revision, data_file=data_file)
    try:
        rows, commit = _fetch(benchmark, requested, how_to_get)
    except DataError:
        raise
    except Exception as e:  # datasets raises many types; each becomes a DataError
        raise hub_error(benchmark, e, requested, how_to_get) from e
    return HubRows(tuple(rows), replace(requested, commit=commit))


def _fetch(
    benchmark: str, source: HubSource, how_to_get: str
) -> tuple[list[dict[str, Any]], str | None]:
    """The one call of ``datasets.load_dataset``: the split's rows and the resolved commit."""
    lib = _datasets(benchmark, source.describe(), how_to_get)
    url = source.file_url
    if url is not None:  # the json builder names a lone file's split "train"
        ds = lib.load_dataset("json", data_files=url, split="train")
    else:
        ds = lib.load_dataset(
            source.dataset_id, source.config, split=source.split, revision=source.revision
        )
    return list(ds.to_list()), _commit(ds, source.revision)
