"""The texts the current suites already cover: the queries of a suite's items (its latest
version, or ``NAME@vN``), or, for a suite not built yet, the queries of its imported pool."""

from __future__ import annotations

from collections.abc import Sequence

from calipers.errors import DataError

__all__ = ["suite_texts"]


def suite_texts(specs: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(texts, notes)`` for the suites named (``NAME``, ``NAME@v2``, ``suite:NAME``)."""
    from calipers.suites import list_suites, load_suite, parse_suite_ref, read_pool

    texts: list[str] = []
    notes: list[str] = []
    for spec in specs:
        name, version = parse_suite_ref(spec)
        if version is None and name in {n for n, v, _p in list_suites() if not v}:
            records, _reports = read_pool(name)
            if not records:
                raise DataError(
                    f"Suite {name!r} has neither a built version nor imported records.",
                    hint=f"calipers suite import FILE --name {name}",
                )
            texts += [r.query for r in records]
            notes.append(f"suite {name} is not built: its {len(records)} pool records used")
            continue
        manifest, items = load_suite(name, version)
        texts += [it.query for it in items]
        notes.append(f"suite {name} v{manifest.version}: {len(items)} items")
    return texts, notes
