"""A turn, from the message to its run's last event.

- `admission.py`   turn_start: limits, ownership, the action token, idempotent resends; starts the run;
- `planning.py`    TurnPlan: system prompt, tools, payload markers and history for the model call;
- `pipe.py`        TextPipe: hides payload/suggestion blocks from the stream, coalesces text deltas;
- `work.py`        Turn: the run's task (model or server action); every event of the run is emitted there;
- `answer.py`      the answer's parts: suggestions, buttons (server ones signed), payload cards;
- `persistence.py` the turn's writes after admission: the assistant message, flushes, the final save.
The `complete` payload itself is built by chat.events.complete_payload_build.
"""
