"""Operations endpoints a host mounts at its root (`include("chat.ops.urls")`): liveness, readiness, metrics."""
