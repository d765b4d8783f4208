"""The model file's sha256 and parsed GGUF header are cached on disk by (real path, device,
inode, size, mtime, ctime) and computed again whenever one of them changes
(calipers._util.digests)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from calipers._util import digests
from calipers._util.digests import cached_file_sha256
from calipers.models import _gguf


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _no_reading(path: Path) -> str:
    raise AssertionError(f"{path} was read although its digest is cached")


@pytest.fixture
def settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files written by a test are seconds old at most: store their digests anyway."""
    monkeypatch.setattr(digests, "RACY_S", -1.0)


@pytest.fixture
def weights(tmp_path: Path) -> Path:
    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(range(256)) * 4096)  # 1 MiB + 4 bytes: two read chunks
    return path


def test_first_call_hashes_and_stores(weights: Path, calipers_home: Path, settled: None) -> None:
    assert cached_file_sha256(weights) == _sha(weights.read_bytes())
    entries = json.loads((calipers_home / "digests.json").read_text())["entries"]
    assert list(entries) == [os.path.realpath(weights)]
    assert entries[os.path.realpath(weights)]["facts"]["sha256"] == _sha(weights.read_bytes())


def test_a_cache_hit_does_not_read_the_file(
    weights: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _sha(weights.read_bytes())
    cached_file_sha256(weights)
    monkeypatch.setattr(digests, "_sha256", _no_reading)
    assert cached_file_sha256(weights) == expected
    link = weights.parent / "link.gguf"  # the same file under another name: the same entry
    link.symlink_to(weights)
    assert cached_file_sha256(link) == expected


def test_same_size_new_content_and_a_touched_mtime_is_rehashed(
    weights: Path, settled: None
) -> None:
    cached_file_sha256(weights)
    data = bytearray(weights.read_bytes())
    data[100] ^= 0xFF  # same size
    weights.write_bytes(bytes(data))
    st = weights.stat()
    os.utime(weights, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert cached_file_sha256(weights) == _sha(bytes(data))


def test_mtime_set_back_to_the_old_value_is_still_rehashed(weights: Path, settled: None) -> None:
    """``touch -d`` can restore the modification time; the status-change time moves anyway."""
    before = weights.stat()
    cached_file_sha256(weights)
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    os.utime(weights, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert weights.stat().st_size == before.st_size
    assert weights.stat().st_mtime_ns == before.st_mtime_ns
    assert cached_file_sha256(weights) == _sha(bytes(data))


def test_a_file_changed_moments_ago_is_not_stored(weights: Path, calipers_home: Path) -> None:
    """Within RACY_S of its last change a file may change again without a new timestamp."""
    assert cached_file_sha256(weights) == _sha(weights.read_bytes())
    assert not (calipers_home / "digests.json").exists()


def test_a_corrupt_or_unwritable_cache_never_fails(
    weights: Path, calipers_home: Path, settled: None, tmp_path: Path
) -> None:
    calipers_home.mkdir(parents=True)
    (calipers_home / "digests.json").write_text("{not json")
    assert cached_file_sha256(weights) == _sha(weights.read_bytes())
    assert json.loads((calipers_home / "digests.json").read_text())["version"] == 1
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    assert cached_file_sha256(weights, blocked / "home") == _sha(weights.read_bytes())


def test_gguf_identity_digest_goes_through_the_cache(
    weights: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_gguf, "_HASHES", {})
    expected = _sha(weights.read_bytes())
    assert _gguf.file_sha256(weights) == expected
    monkeypatch.setattr(_gguf, "_HASHES", {})  # a new process: only the disk cache is left
    monkeypatch.setattr(digests, "_sha256", _no_reading)
    assert _gguf.file_sha256(weights) == expected


def test_the_gguf_header_is_cached_with_the_digest(
    tmp_path: Path, settled: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small GGUF written by hand: version 3, no tensors, three metadata pairs."""
    import struct

    def kv_str(key: str, value: str) -> bytes:
        k, v = key.encode(), value.encode()
        return struct.pack("<Q", len(k)) + k + struct.pack("<IQ", 8, len(v)) + v

    def header(name: str) -> bytes:
        tokens = [b"<s>", b"</s>", b"hi"]
        arr = struct.pack("<Q", len(b"tokenizer.ggml.tokens")) + b"tokenizer.ggml.tokens"
        arr += struct.pack("<IIQ", 9, 8, len(tokens))
        arr += b"".join(struct.pack("<Q", len(t)) + t for t in tokens)
        eos = struct.pack("<Q", 27) + b"tokenizer.ggml.eos_token_id" + struct.pack("<II", 4, 1)
        return b"GGUF" + struct.pack("<IQQ", 3, 0, 3) + kv_str("general.name", name) + arr + eos

    path = tmp_path / "tiny.gguf"
    path.write_bytes(header("tiny-a"))
    first = _gguf.read_metadata(path)
    assert first.metadata == {"general.name": "tiny-a", "tokenizer.ggml.eos_token_id": 1}
    assert first.special_tokens == {"eos": "</s>"}

    def no_parsing(p: Path) -> None:
        raise AssertionError(f"{p} was parsed although its header is cached")

    monkeypatch.setattr(_gguf, "_parse_header", no_parsing)
    assert _gguf.read_metadata(path) == first
    monkeypatch.undo()
    monkeypatch.setattr(digests, "RACY_S", -1.0)
    path.write_bytes(header("tiny-b"))  # same size, new content: parsed again
    assert _gguf.read_metadata(path).metadata["general.name"] == "tiny-b"
