"""The production side (layer 4): A/B decisions on the gateway's logged traffic
(``calipers ab``) and monitoring with drift detection (``calipers monitor``). Both read what
the gateway wrote to the store. See ``docs/ab.md`` and ``docs/monitor.md``.
"""

from calipers.monitor._traffic import (
    Exchange,
    load_exchanges,
    messages_of,
    pair_records,
    prompt_text,
)

__all__ = ["Exchange", "load_exchanges", "messages_of", "pair_records", "prompt_text"]
