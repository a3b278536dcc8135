"""The memory report tool: python -m trainer.memory."""
