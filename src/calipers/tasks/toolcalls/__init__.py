"""Single-call tool accuracy tasks: ``tool_calls`` (calipers' built-in items) and ``bfcl``
(the Berkeley Function Calling Leaderboard's files from the ``bfcl-eval`` package), graded by
the ``tool_call_match`` scorer. Everything loads on first use (``calipers._util.lazy``)."""

from typing import TYPE_CHECKING

from calipers._util.lazy import lazy_exports

if TYPE_CHECKING:
    from calipers.tasks.toolcalls._items import (
        safe_name,
        sample_from_record,
        to_json_schema,
        tool_specs,
    )
    from calipers.tasks.toolcalls._task import (
        BFCL_CATEGORIES,
        BUILTIN,
        SingleCallEnv,
        bfcl_data_dir,
        bfcl_task,
        load_bfcl,
        load_builtin,
        register,
        tool_calls_task,
    )

__all__ = [
    "BFCL_CATEGORIES",
    "BUILTIN",
    "SingleCallEnv",
    "bfcl_data_dir",
    "bfcl_task",
    "load_bfcl",
    "load_builtin",
    "register",
    "safe_name",
    "sample_from_record",
    "to_json_schema",
    "tool_calls_task",
    "tool_specs",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "safe_name": "_items",
        "sample_from_record": "_items",
        "to_json_schema": "_items",
        "tool_specs": "_items",
        "BFCL_CATEGORIES": "_task",
        "BUILTIN": "_task",
        "SingleCallEnv": "_task",
        "bfcl_data_dir": "_task",
        "bfcl_task": "_task",
        "load_bfcl": "_task",
        "load_builtin": "_task",
        "register": "_task",
        "tool_calls_task": "_task",
    },
)
