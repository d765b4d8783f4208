"""The production gateway (layer 4): an OpenAI-compatible proxy in front of a baseline and a
candidate upstream, in ``shadow``, ``canary`` or ``off`` mode, logging every request/response
pair to the store. Needs the ``gateway`` extra (FastAPI, uvicorn). See ``docs/gateway.md``.

    from calipers.gateway import GatewayConfig, create_app
    app = create_app(GatewayConfig(baseline_url="http://127.0.0.1:8000/v1",
                                   candidate_url="http://127.0.0.1:8001/v1", mode="shadow"))
"""

from calipers.gateway._app import create_app
from calipers.gateway._breaker import BreakerState, CircuitBreaker
from calipers.gateway._config import FingerprintCanaryConfig, GatewayConfig, Mode, load_config
from calipers.gateway._routing import MirrorSampler, hash_key, in_canary, user_key
from calipers.gateway._serve import serve

__all__ = [
    "BreakerState",
    "CircuitBreaker",
    "FingerprintCanaryConfig",
    "GatewayConfig",
    "MirrorSampler",
    "Mode",
    "create_app",
    "hash_key",
    "in_canary",
    "load_config",
    "serve",
    "user_key",
]
