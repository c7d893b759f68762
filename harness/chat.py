"""Re-exports the prompt renderer, which lives in ``contract.chat`` (every layer renders with it)."""

from contract.chat import NoChatTemplate, Renderer, common_prefix_len

__all__ = ["NoChatTemplate", "Renderer", "common_prefix_len"]
