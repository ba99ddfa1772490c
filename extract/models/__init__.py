"""Model clients: a port (``base.py``) that owns retries, throttling, cost and the ledger; Gemini on
google-genai (``gemini.py``); a fallback chain; and a simulated Gemini for load tests.

Providers are imported lazily (``clients.build_models``) so that commands that call no model never
import google-genai.
"""

from extract.models.base import (
    CallSite,
    Image,
    Ledger,
    ModelClient,
    ModelFailed,
    ModelProvider,
    Outcome,
    Prompt,
    ProviderError,
    Reply,
    RetryPolicy,
)
from extract.models.config import ModelConfig
from extract.models.fallback import Answer, FallbackModels
from extract.models.limiter import AimdLimiter
from extract.models.pricing import ModelPrice, PriceTable

__all__ = ["AimdLimiter", "Answer", "CallSite", "FallbackModels", "Image", "Ledger", "ModelClient",
           "ModelConfig", "ModelFailed", "ModelPrice", "ModelProvider", "Outcome", "PriceTable",
           "Prompt", "ProviderError", "Reply", "RetryPolicy"]
