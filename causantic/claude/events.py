"""The Claude Code hook events causantic answers, in one table.

`install` registers these, `doctor` checks them, `causantic hook <event>` accepts their
commands and `plugin/hooks/hooks.json` lists them (a test compares it with this table).
Standard library only, no dataclasses: the hook fast path reads it.
"""

#: (Claude Code's event name, our `causantic hook` subcommand, matcher or None, timeout in
#: seconds), in the order install writes them. UserPromptSubmit is registered only with
#: `[hooks] user_prompt_submit`, PreToolUse on Agent/Task and SubagentStart (recall for a
#: sub-agent's task) only with `[hooks] subagent_recall`; the lesson hooks as `causantic.claude.lesson_hook.registered`
#: says: PostToolUse on Bash only with `[lessons] bash_output = true`, neither with
#: `[lessons] hook = false`.
HOOKS: tuple[tuple[str, str, str | None, int], ...] = (
    ("SessionStart", "session-start", "startup|resume|clear|compact|fork", 10),
    ("UserPromptSubmit", "user-prompt-submit", None, 5),
    ("PreToolUse", "pre-tool-use", "Agent|Task", 5),
    ("SubagentStart", "subagent-start", None, 5),
    ("PreCompact", "pre-compact", None, 30),
    ("SessionEnd", "session-end", None, 10),
    ("SubagentStop", "subagent-stop", None, 10),
    ("PostToolUse", "post-tool-use", "Bash", 5),
    ("PostToolUseFailure", "post-tool-use", None, 5),
)

#: The `causantic hook` subcommands, in the table's order.
EVENTS: tuple[str, ...] = tuple(dict.fromkeys(command for _, command, _, _ in HOOKS))

#: The `causantic hook` subcommands of sub-agent recall (`causantic.claude.handoff`).
SUBAGENT_RECALL = frozenset({"pre-tool-use", "subagent-start"})
