"""The agent loop and its types: pure Python, no Django."""
