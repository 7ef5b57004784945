"""Every ``reason`` tidings answers with: one registry, each with its sentence (issue 22).

A reason is the machine-readable word in an error result (``{"status": "error", "reason"}``),
in a :class:`~tidings.store.errors.TidingsError`, in a CLI usage error, or in an ``ok`` or
``unavailable`` result that says which of several things happened. It lives here, in the
lowest layer, so every layer can name it. ``tests/unit/test_reasons.py`` fails when the code
answers a reason missing here, or when an entry here is missing from ``docs/reference/reasons.md``.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

Reason = Literal[
    # errors every layer raises (store/errors.py)
    "error",
    "unsafe_path",
    "lock_timeout",
    "no_store",
    "unknown_agent",
    "store_error",
    "internal_error",
    # the store answered and refused (interfaces.md, Never silent, never wrong)
    "auth_failed",
    "no_permission",
    # hub, agent records and settings
    "invalid_redis_url",
    "placeholder_password",
    "invalid_broker_url",
    "broker_url_required",
    "broker_on_cluster",
    "invalid_workdir",
    "invalid_memory_repo",
    "agent_id_conflict",
    "invalid_agent",
    "invalid_channel",
    "invalid_guard",
    "invalid_host",
    "invalid_persistent",
    "invalid_input",
    "invalid_dialect",
    "workdir_missing",
    "metrics_address_unavailable",
    # CLI usage
    "bad_usage",
    "invalid_json",
    "invalid_setting",
    "unreadable_file",
    "port_in_use",
    "worker_process_died",
    "unknown_tool",
    "weak_token",
    # the default store under `tidings up`
    "store_busy",
    "no_engine",
    "engine_failed",
    "store_engine_died",
    "not_running",
    "stop_timeout",
    "not_loopback",
    # faults of the store and its state directory (issue 30)
    "store_unresponsive",
    "store_refuses_writes",
    "state_dir_full",
    "state_dir_read_only",
    "store_data_missing",
    # publishing, envelopes and channels (C)
    "invalid_envelope",
    "invalid_event",
    "envelope_too_large",
    "event_too_large",
    "invalid_event_id",
    "invalid_priority",
    "invalid_idempotency_key",
    "reserved_channel",
    "reserved_source",
    "missing_daemon_id",
    "invalid_daemon_id",
    "daemon_run_full",
    "daemon_write_failed",
    "daemon_control_error",
    "invalid_timeout",
    "invalid_wake",
    # the tool's own error answers (C42, C44)
    "invalid_argument",
    "settings_unavailable",
    "unknown_action",
    # dismissal (C)
    "missing_channel",
    "missing_event_id",
    "missing_ref_id",
    "missing_ack_reason",
    "protected_channel",
    "atomic_dismiss_requires_system_channel",
    "channel_dismiss_rejects_event_target",
    "guarded",
    "stale_channel_version",
    "clear_failed",
    # hooks (C)
    "added",
    "edited",
    "dropped",
    "no_change",
    "not_found",
    "duplicate_name",
    "channel_in_use",
    "invalid_manifest",
    "hook_registry_full",
    "hook_registry_load_failed",
    "hook_registry_write_failed",
    # delay (D)
    "invalid_delay",
    "delay_requires_workdir",
    "delay_target_mismatch",
    "delay_state_write_failed",
    "delay_expiry_recovery_pending",
    # inbox and turns (M)
    "invalid_payload",
    "payload_too_large",
    "invalid_key",
    "invalid_source_kind",
    "reserved_source_kind",
    "invalid_summary",
    "inbox_full",
    "not_ignorable",
    "invalid_limit",
    "invalid_state",
    "invalid_before",
    "invalid_kind",
    "turn_in_progress",
    "turn_expired",
    "unknown_turn",
    "startup_failed",
    "worker_timeout",
    "undecodable",
    # memory observation (M)
    "not_configured",
    "checkpoint_conflict",
    "checkpoint_too_new",
    "observation_busy",
    "observation_failed",
    "manual",
    "missing",
    "not_a_repository",
    "unreadable",
    "unstable",
    "index_too_large",
    "timeout",
    # the scheduler's full scans (C27), as metric labels
    "interval",
    "overflow",
    "watch_limit",
    "watcher_error",
    "no_watcher",
]

#: What each reason means, in a sentence (the text of ``docs/reference/reasons.md``).
REASONS: Final[dict[Reason, str]] = {
    "error": "A tidings failure with no more specific reason.",
    "unsafe_path": "A symlink or a non-regular file stands where a directory or file must be; "
    "nothing was read through it or written.",
    "lock_timeout": "A resource lock was not obtained in time; nothing changed, try again.",
    "no_store": "Nothing listens at the configured Redis address.",
    "unknown_agent": "No agent is registered under that id.",
    "store_error": "Redis or the file system failed underneath the call.",
    "internal_error": "An unexpected failure inside tidings (C52); it was logged and "
    "nothing was left half-done.",
    "auth_failed": "The store answered but refused the credentials: wrong user or password "
    "(never no_store).",
    "no_permission": "The store's ACL user lacks a command or key the call needs; the "
    "message names the user, the command and the role that has it "
    "(deploy/README.md, Roles).",
    "invalid_redis_url": "The Redis URL cannot be parsed.",
    "placeholder_password": "A Redis URL carries a change-me placeholder password; it is "
    "refused before connecting (interfaces.md, Local trust).",
    "invalid_broker_url": "The control store's URL (TIDINGS_BROKER_URL, --broker-url, "
    "broker_url=) cannot be parsed.",
    "broker_url_required": "The state store is a Redis Cluster and no control store was "
    "given: set TIDINGS_BROKER_URL to a standalone Redis "
    "(interfaces.md, Past one Redis).",
    "broker_on_cluster": "The control store given is a Redis Cluster; the broker needs one "
    "standalone Redis (interfaces.md, Past one Redis).",
    "invalid_workdir": "The agent's workdir is not a directory, or its path is not UTF-8.",
    "invalid_memory_repo": "The agent's memory repository is missing, not a Git repository "
    "with a working tree (a plain folder, a bare repository), or its "
    "path is not valid UTF-8; nothing was registered.",
    "agent_id_conflict": "The agent id is already registered with another workdir.",
    "invalid_agent": "The agent's registration fields (such as max_events) are not valid.",
    "invalid_channel": "The channel name is not valid, not allowed for this agent, or not "
    "one the call accepts.",
    "invalid_guard": "A dismissal guard's suggested verb is not a non-empty string.",
    "invalid_host": "The host name given for the agent is not valid.",
    "invalid_persistent": "A persistent block is not a JSON object.",
    "invalid_input": "A call's argument has the wrong type or size.",
    "invalid_dialect": "The tool-schema dialect is not one tidings knows.",
    "workdir_missing": "The agent's workdir vanished; the worker skips the job and reports it.",
    "metrics_address_unavailable": "The metrics endpoint's address cannot be bound.",
    "bad_usage": "The command line is not valid for this command.",
    "invalid_json": "A JSON argument is not valid JSON, or not the JSON object required.",
    "invalid_setting": "A TIDINGS_* setting has a value that does not validate.",
    "unreadable_file": "An @file argument cannot be read as UTF-8 text.",
    "port_in_use": "The port asked for is already in use.",
    "worker_process_died": "A worker process of `tidings up` exited.",
    "store_busy": "Another `tidings up` already serves this state directory (or an engine it "
    "left still holds it).",
    "no_engine": "No store engine binary was found to serve the default store.",
    "engine_failed": "The store engine did not start or did not become ready.",
    "store_engine_died": "The store engine under `tidings up` exited; `up` stops.",
    "not_running": "`tidings stop` found no `tidings up` serving the state directory; "
    "nothing was stopped.",
    "stop_timeout": "`tidings up` got `tidings stop`'s SIGTERM and still runs after the "
    "timeout; it may still be draining its worker or syncing the store.",
    "store_unresponsive": "The store accepted the connection but did not answer within its timeout"
    " (a hung or stopped engine); `tidings up` exits 1 when its engine hangs"
    " for TIDINGS_STORE_HANG_SECONDS.",
    "store_refuses_writes": "The store refuses writes (MISCONF: its engine cannot write its "
    "append-only file, e.g. a full or read-only disk); nothing was "
    "written, retry once the disk is fixed.",
    "state_dir_full": "The default store's state directory (TIDINGS_STATE_DIR) is on a full file "
    "system; free space there.",
    "state_dir_read_only": "The default store's state directory (TIDINGS_STATE_DIR) cannot be "
    "written (a read-only file system or no write permission).",
    "store_data_missing": "The default store's data vanished from its state directory (deleted "
    "while `tidings up` ran, or its append-only files are gone); `tidings up"
    " --fresh` starts empty on purpose.",
    "unknown_tool": "The MCP tool name is not one tidings serves.",
    "weak_token": "The console was asked to listen off loopback with a TIDINGS_WEB_TOKEN "
    "shorter than 32 characters.",
    "not_loopback": "The MCP HTTP server was asked to listen on a non-loopback address; it "
    "serves loopback only (interfaces.md, Local trust).",
    "invalid_envelope": "The envelope is not a JSON object of the accepted shape (C7).",
    "invalid_event": "The event is not a JSON object of the accepted shape.",
    "envelope_too_large": "The envelope is over 1 MiB of JSON.",
    "event_too_large": "The event is over 256 KiB of JSON.",
    "invalid_event_id": "The event_id is not a non-empty string of at most 200 characters.",
    "invalid_priority": "The priority is not null, low, normal or high.",
    "invalid_idempotency_key": "The idempotency key is not a valid Unicode string within the "
    "limit.",
    "reserved_channel": "The channel is published by tidings only (delay-alarm).",
    "reserved_source": "A producer's system event has the source or ref_id of tidings' own "
    "notices (C54); nothing was written.",
    "missing_daemon_id": "A daemon event was published without a daemon_id.",
    "invalid_daemon_id": "The daemon_id is not a valid name.",
    "daemon_run_full": "The daemon run's file is over its 1 MiB limit.",
    "daemon_write_failed": "The daemon event could not be written.",
    "daemon_control_error": "A daemon control file cannot be read as valid control data.",
    "invalid_timeout": "A wait's timeout is not a finite number of seconds >= 0.",
    "invalid_wake": "The wake flag is not true or false, or a wake signal has no kind.",
    "invalid_argument": "The tool call's arguments are not a valid call (C44); the answer's "
    "error_code is INVALID_ARGUMENT.",
    "settings_unavailable": "The settings inventory could not be read (C42); the answer's "
    "error_code is SETTINGS_UNAVAILABLE.",
    "unknown_action": "The notification tool has no action by that name (C44).",
    "missing_channel": "dismiss_channel was called without a channel.",
    "missing_event_id": "dismiss_event was called without an event_id.",
    "missing_ref_id": "dismiss_ref was called without a ref_id.",
    "missing_ack_reason": "Dismissing this channel needs a reason (the acknowledgement).",
    "protected_channel": "The channel cannot be dismissed.",
    "atomic_dismiss_requires_system_channel": "Event and ref dismissal work on the system "
    "and daemon channels only.",
    "channel_dismiss_rejects_event_target": "dismiss_channel clears a whole channel; it takes "
    "no event_id or ref_id.",
    "guarded": "The channel is guarded: use its suggested verb, or force=true.",
    "stale_channel_version": "The channel changed since the agent last read it; nothing was "
    "dismissed.",
    "clear_failed": "The channel's file could not be read, so nothing was cleared.",
    "added": "The hook was added.",
    "edited": "The hook was edited.",
    "dropped": "The hook was dropped.",
    "no_change": "The hook edit changed nothing.",
    "not_found": "No hook, dead letter or inbox item by that name or id.",
    "duplicate_name": "A hook of that name exists already.",
    "channel_in_use": "Another hook owns that channel.",
    "invalid_manifest": "The hook manifest is not valid.",
    "hook_registry_full": "The hook registry holds its maximum of hooks.",
    "hook_registry_load_failed": "hooks.json cannot be loaded (C41).",
    "hook_registry_write_failed": "The hook registry could not be locked or written (C51).",
    "invalid_delay": "The delay request's channel or seconds are not valid (D1).",
    "delay_requires_workdir": "A delay needs the agent's workdir, which is not a directory.",
    "delay_target_mismatch": "The live delay is on another channel.",
    "delay_state_write_failed": "The delay state could not be persisted.",
    "delay_expiry_recovery_pending": "An overdue delay's alarm is not published yet; try again.",
    "invalid_payload": "The inbox item's payload is not a valid JSON object.",
    "payload_too_large": "The inbox item's payload is over its size limit.",
    "invalid_key": "The inbox key is not a non-empty string of at most 200 characters.",
    "invalid_source_kind": "The source_kind does not match ^[a-z][a-z0-9._-]{0,63}$.",
    "reserved_source_kind": "memory-change items are admitted by tidings only.",
    "invalid_summary": "The inbox item's summary is not a non-empty string.",
    "inbox_full": "The inbox holds its maximum of open items.",
    "not_ignorable": "The inbox item is in a state that cannot be ignored.",
    "invalid_limit": "The page limit is not an integer in range.",
    "invalid_state": "The inbox state filter is not one of the item states.",
    "invalid_before": "The before cursor is not a retained event id.",
    "invalid_kind": "The turn kind is not one tidings knows.",
    "turn_in_progress": "An unfinished turn holds the agent's turn slot: finish it "
    "(finish_turn), or run startup() after an orchestrator crash.",
    "turn_expired": "The turn's lease passed; its items were recovered.",
    "unknown_turn": "No turn by that id.",
    "startup_failed": "An agent's start-up turn preparation failed.",
    "worker_timeout": "No worker answered within the wait.",
    "undecodable": "The dead letter cannot be decoded.",
    "not_configured": "The agent has no memory repository.",
    "checkpoint_conflict": "Another observation moved the memory checkpoint first.",
    "checkpoint_too_new": "The memory checkpoint was written by a newer tidings.",
    "observation_busy": "Another memory observation of this agent is running.",
    "observation_failed": "The memory observation failed; it was logged and the turn goes on.",
    "manual": "A memory observation the caller asked for (observe_memory's default trigger); "
    "the metrics count every caller-chosen trigger under it.",
    "missing": "The memory repository path does not exist.",
    "not_a_repository": "The memory repository path is not a git work tree.",
    "unreadable": "The memory repository cannot be read, or one of its metadata files is not "
    "a regular file (M55: a FIFO, socket, device or symlink).",
    "index_too_large": "The memory repository's index file is over the 64 MiB cap (M55).",
    "timeout": "The memory observation did not answer within its time limit (M55); the "
    "worker went on.",
    "unstable": "The memory work tree, or the notification files (C24), kept changing "
    "during the read.",
    "interval": "A full sync scan because its interval passed (C27).",
    "overflow": "A full sync scan because the file watcher's queue overflowed (C27).",
    "watch_limit": "A full sync scan because the file watcher hit its watch limit (C27).",
    "watcher_error": "A full sync scan because the file watcher stopped (C27).",
    "no_watcher": "A full sync scan because no file watcher runs (C27).",
}

#: Every reason, for membership tests.
ALL: Final[frozenset[str]] = frozenset(get_args(Reason))
