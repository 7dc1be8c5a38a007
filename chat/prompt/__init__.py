"""What the model reads: the system prompt (`system`), history as provider messages (`history`), the user's language."""
