"""Every dramatiq actor's name, in one place (issue 22): what declares an actor and what
sends to it name it here, so the two cannot drift apart."""

from __future__ import annotations

#: C12-C14: flush one channel's buffered records into its file.
FLUSH_CHANNEL = "flush_channel"
#: C52: a flush out of retries gives its channel up.
FLUSH_DEAD_LETTER = "flush_dead_letter"
#: D17: publish an expired delay's alarm.
EXPIRE_DELAY = "expire_delay"
#: C27: one sync tick over a host's agents.
SYNC_HOST = "sync_host"
#: D15: an alarm job change, consumed by the host's active scheduler only.
ALARM_REQUEST = "alarm_request"
#: M10, M43: the memory observation of a turn's worker group.
OBSERVE_MEMORY = "observe_memory"
#: C24, M43: the attention lane of a turn's worker group.
RENDER_ATTENTION = "render_attention"
